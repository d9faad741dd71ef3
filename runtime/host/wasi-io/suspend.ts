/**
 * Turns a component thread into one whose guests suspend (JSPI) while they wait on outgoing HTTP,
 * instead of blocking the thread while the main thread performs the request (net-relay.ts): the
 * thread performs its requests itself (net-local.ts), and the backend answers a wait on them with
 * a promise (backend.ts), which the suspending glue's imports await (transpile-jco.ts).
 *
 * Two things of preview2-shim stand in the way, and are changed in this thread only, before its
 * first instance is made:
 * - `Pollable#block` drops what its call returns, and it and `poll` carry a `cabiLower` fast path
 *   that jco's glue takes in place of its own trampoline, suspending one included: `block` returns
 *   the call's answer here, and neither has the fast path (the generic path calls them as methods,
 *   synchronous instances included);
 * - a stream error thrown by the backend is turned into the shim's IoError resource by the shim's
 *   call wrapper, which a rejected promise passes by: rejections are turned the same way.
 */
import * as io from '@bytecodealliance/preview2-shim/io';
import * as calls from '@bytecodealliance/preview2-shim/dist/io/calls.js';
import { connectRoute } from './channel.ts';
import { LocalNet } from './net-local.ts';
import { backend, mapRejections } from './synckit.ts';

const REP = Symbol.for('cabiRep');
const LOWER = Symbol.for('cabiLower');

type IoErrorClass = new (e: Error) => unknown;

let enabled = false;

export function enableSuspending(): void {
  if (enabled) return;
  enabled = true;
  const poll = io.poll as unknown as { Pollable: { prototype: Record<string | symbol, unknown> }; poll: Record<symbol, unknown> };
  const block = (calls as unknown as Record<string, number>).POLL_POLLABLE_BLOCK!;
  poll.Pollable.prototype.block = function (this: Record<symbol, number>): unknown {
    return backend.call(block, this[REP]!, undefined);
  };
  delete poll.poll[LOWER];
  const IoError = (io.error as unknown as { Error: IoErrorClass }).Error;
  mapRejections((e) => {
    const x = e as { tag?: string; val?: { message?: string } };
    if (x?.tag === 'last-operation-failed' && x.val && !(x.val instanceof IoError))
      x.val = new IoError(Object.assign(new Error(x.val.message), x.val)) as never;
    return e;
  });
  connectRoute(new LocalNet());
}
