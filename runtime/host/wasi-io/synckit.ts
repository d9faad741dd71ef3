/**
 * Stands in for preview2-shim's `synckit/index.js` inside the component worker's bundle
 * (bundle.ts): the shim builds its `ioCall` with `createSyncFn(startWorker, …)` when its I/O module
 * loads; this one starts no thread and answers every call in this thread (backend.ts).
 */
import * as calls from '@bytecodealliance/preview2-shim/dist/io/calls.js';
import { IoBackend } from './backend.ts';
import { currentNet } from './channel.ts';

export const backend = new IoBackend(calls as unknown as Record<string, number>, { net: currentNet });

let rejected: ((e: unknown) => unknown) | undefined;

/** How a call answered with a promise turns its rejection into what the guest's glue expects (suspend.ts). */
export function mapRejections(map: (e: unknown) => unknown): void {
  rejected = map;
}

export function createSyncFn(): (call: number, id: number | null, payload: unknown) => unknown {
  return (call, id, payload) => {
    const r = backend.call(call, id, payload);
    if (rejected && r instanceof Promise) {
      const map = rejected;
      return r.catch((e: unknown) => {
        throw map(e);
      });
    }
    return r;
  };
}

/** The shim's I/O worker entry; never started here. */
export function runAsWorker(): never {
  throw new Error("preview2-shim's I/O worker is not used by this runtime (runtime/host/wasi-io/)");
}
