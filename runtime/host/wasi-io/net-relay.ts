/**
 * The main thread's side of a component's outgoing HTTP (net-protocol.ts): performs each request
 * the guest's thread sends (net-request.ts, on the keep-alive pool of net-pool.ts), and forwards
 * the response's head, body chunks and end. One hop per request instead of preview2-shim's I/O
 * worker, which took 16 synchronous round trips of 0.3–2.5 ms each per provider request (measured
 * in `mur serve` under load: 11 ms per request against 0.8 ms for a plain Node request).
 *
 * The allowlist is checked in the guest's thread before a request is sent (runtime/host/wasi.ts).
 */
import type { MessagePort } from 'node:worker_threads';
import type { ToGuest, ToMain } from './net-protocol.ts';
import { SHARED_AGENTS, type NetAgents } from './net-pool.ts';
import { startRequest, type LiveRequest } from './net-request.ts';

/** Serves one component thread's requests until its port closes (the worker ended). */
export function serveNet(port: MessagePort, flag: Int32Array, agents: NetAgents = SHARED_AGENTS): void {
  const live = new Map<number, LiveRequest>();
  // What one turn of this thread has for the guest goes as one post and one wake-up, in order: a
  // provider's streamed answer comes as several body chunks per socket read (a one-turn answer of
  // the scripted provider: a head, 7 chunks and the end, 9 posts and notifies on the main thread).
  let outbox: ToGuest[] = [];
  const flush = (): void => {
    const batch = outbox;
    outbox = [];
    port.postMessage(batch);
    Atomics.add(flag, 0, 1);
    Atomics.notify(flag, 0);
  };
  const send = (m: ToGuest): void => {
    if (outbox.push(m) === 1) queueMicrotask(flush);
  };
  port.on('message', (m: ToMain) => {
    if (m.op === 'request')
      live.set(
        m.rid,
        startRequest(m, send, agents, () => live.delete(m.rid)),
      );
    else if (m.op === 'abort') live.get(m.rid)?.abort();
  });
  // The worker ended (finished, retired or terminated at a deadline): drop what it left running.
  port.on('close', () => {
    for (const r of [...live.values()]) r.destroy();
    live.clear();
  });
  port.unref();
}
