/**
 * Whether component threads perform their guests' outgoing HTTP themselves, the guest suspended
 * while it waits (JSPI; wasi-io/suspend.ts), rather than relaying each request to the main thread
 * while the guest's thread blocks (wasi-io/net-relay.ts). Two of a task's thread hand-offs per
 * provider request go, and with them the main thread's share of every request. It needs
 * WebAssembly JSPI (`WebAssembly.Suspending`: Node 24, the runtime image's; Node 20 has none), so
 * by default it is on where the Node has it. `MURMUR_JSPI=0` relays every request (the way
 * compared against in bench/), `MURMUR_JSPI=1` insists (an error where the Node cannot).
 */
import { MurError } from '../errors.ts';

export function hasJspi(): boolean {
  return typeof (WebAssembly as unknown as { Suspending?: unknown }).Suspending === 'function';
}

export function suspendingThreads(env: NodeJS.ProcessEnv = process.env, jspi: boolean = hasJspi()): boolean {
  const v = env.MURMUR_JSPI;
  if (v === undefined || v === '') return jspi;
  if (v === '0') return false;
  if (v === '1') {
    if (jspi) return true;
    throw new MurError('E-RUN-087', `MURMUR_JSPI=1 asks for suspending component threads, and this Node (${process.version}) has no WebAssembly JSPI`, {
      hint: 'run on Node 24 or later (the runtime image), or unset MURMUR_JSPI: the runtime then uses JSPI where the Node has it',
    });
  }
  throw new MurError('E-RUN-087', `MURMUR_JSPI must be 0 or 1, not ${JSON.stringify(v)}`, {
    hint: 'unset it (JSPI where the Node has it), 0 (every request relayed through the main thread) or 1 (JSPI, or an error)',
  });
}
