/**
 * Stands in for preview2-shim's `synckit/index.js` inside the component worker's bundle
 * (bundle.ts): the shim builds its `ioCall` with `createSyncFn(startWorker, …)` when its I/O module
 * loads; this one starts no thread and answers every call in this thread (backend.ts).
 */
import * as calls from '@bytecodealliance/preview2-shim/dist/io/calls.js';
import { IoBackend } from './backend.ts';
import { currentNet } from './channel.ts';

export const backend = new IoBackend(calls as unknown as Record<string, number>, { net: currentNet });

export function createSyncFn(): (call: number, id: number | null, payload: unknown) => unknown {
  return (call, id, payload) => backend.call(call, id, payload);
}

/** The shim's I/O worker entry; never started here. */
export function runAsWorker(): never {
  throw new Error("preview2-shim's I/O worker is not used by this runtime (runtime/host/wasi-io/)");
}
