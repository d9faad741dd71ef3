/**
 * A pod the EndpointSlice says is ready may not be reachable from here yet: the NetworkPolicy
 * engine adds a new pod's address to the activator's egress rule (and to the capsule's ingress
 * rule) a moment after the pod is Ready — on the real node kube-router lagged by up to a few
 * hundred ms while several capsules woke at once, and a forward in that window was refused
 * (ECONNREFUSED from a REJECT rule) or its SYNs dropped. So before a held request is forwarded, a
 * TCP connect to the pod must succeed: refused, unreachable or unanswered connects are tried again
 * with a short backoff until the deadline. Nothing of the request has been sent by then, so trying
 * again is safe, and a connect costs one round trip on the pod network.
 *
 * An unanswered connect is given up after 100 ms at first (doubling to 1 s), not after 1 s: a SYN
 * the engine dropped is sent again by the kernel only after its initial retransmission timeout of
 * 1 s, so a single long attempt waited out that second even when the rule came in 100 ms later.
 * On the real node with 500 Capsules (1 000 NetworkPolicies for kube-router to sync) the activator
 * logged 69 failed connects over 70 wakes, and the wakes' times fell near whole seconds (2, 3, 4 s). A connect on a pod network takes
 * well under a millisecond; a loaded activator whose short attempts fail anyway soon waits longer.
 */
import net from 'node:net';
import type { Endpoint } from './endpoints.ts';

/** The first connect waits this long for an answer, each next one twice as long, up to CONNECT_MAX_MS. */
const FIRST_CONNECT_MS = 100;
/** One connect waits at most this long (a dropped SYN would otherwise wait minutes). */
const CONNECT_MAX_MS = 1000;
const FIRST_BACKOFF_MS = 25;
const MAX_BACKOFF_MS = 200;

function connectOnce(to: Endpoint, ms: number, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s = net.connect({ host: to.ip, port: to.port });
    const done = (why: string | undefined) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      s.destroy();
      resolve(why);
    };
    const onAbort = () => done('aborted');
    const timer = setTimeout(() => done(`no answer to a connect within ${ms} ms`), ms);
    signal.addEventListener('abort', onAbort, { once: true });
    s.once('connect', () => done(undefined));
    s.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  });
}

/**
 * Resolves when a TCP connect to `to` succeeds (true), or false once `deadline` (epoch ms) passes
 * or `signal` aborts. `failed` hears each failed attempt (metrics, logs, tests).
 */
export async function reachable(to: Endpoint, deadline: number, signal: AbortSignal, failed: (why: string) => void = () => {}): Promise<boolean> {
  let backoff = FIRST_BACKOFF_MS;
  let connectMs = FIRST_CONNECT_MS;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0 || signal.aborted) return false;
    const why = await connectOnce(to, Math.min(connectMs, left), signal);
    connectMs = Math.min(connectMs * 2, CONNECT_MAX_MS);
    if (why === undefined) return true;
    if (signal.aborted) return false;
    failed(why);
    const wait = Math.min(backoff, deadline - Date.now());
    if (wait <= 0) return false;
    await new Promise<void>((r) => {
      const t = setTimeout(r, wait);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          r();
        },
        { once: true },
      );
    });
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}
