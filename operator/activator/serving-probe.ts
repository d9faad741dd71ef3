/**
 * A woken pod serves before the kubelet says so: the runtime answers `/readyz` about 0.35 s after
 * its container starts, the kubelet probes it once a second, and the EndpointSlice then follows the
 * pod's Ready condition. So while a request is held the activator also asks a starting pod itself —
 * an endpoint the EndpointSlice controller lists as not ready and not terminating, i.e. a pod that
 * has its address — with `GET /readyz` on its a2a port (the runtime serves it there as on the
 * metrics port, and does not count it as activity), every 50 ms, each answer awaited at most 1 s.
 * The first 200 makes the pod a target for the held requests, as the Knative activator does with
 * its own probes. One probe per pod address however many requests wait for it.
 */
import http from 'node:http';
import type { Endpoint } from './endpoints.ts';

const EVERY_MS = 50;
const ANSWER_MS = 1000;
/** A pod found serving stays a target this long without another probe (it turns Ready meanwhile). */
const SERVING_TTL_MS = 30_000;

function readyz(to: Endpoint, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: to.ip, port: to.port, path: '/readyz', timeout: ANSWER_MS, signal, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

export class ServingProbes {
  private readonly serving = new Map<string, number>();
  private readonly probing = new Map<string, AbortController>();

  /** `found(key)`: a pod of Service `key` answered; the waits re-check. */
  constructor(private readonly found: (key: string) => void) {}

  /** A starting endpoint of `key` known to serve, if any; starts probing the others (until `deadline`). */
  servingOf(key: string, starting: Endpoint[], deadline: number): Endpoint | undefined {
    const now = Date.now();
    for (const e of starting) {
      const id = `${e.ip}:${e.port}`;
      const at = this.serving.get(id);
      if (at !== undefined && now - at < SERVING_TTL_MS) return e;
      if (!this.probing.has(id) && deadline > now) void this.probe(key, id, e, deadline);
    }
    return undefined;
  }

  private async probe(key: string, id: string, e: Endpoint, deadline: number): Promise<void> {
    const stop = new AbortController();
    this.probing.set(id, stop);
    const timer = setTimeout(() => stop.abort(), Math.max(0, deadline - Date.now()));
    try {
      while (!stop.signal.aborted) {
        if (await readyz(e, stop.signal)) {
          this.serving.set(id, Date.now());
          if (this.serving.size > 10_000) this.serving.delete(this.serving.keys().next().value as string);
          this.found(key);
          return;
        }
        await new Promise<void>((r) => {
          const t = setTimeout(r, EVERY_MS);
          stop.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(t);
              r();
            },
            { once: true },
          );
        });
      }
    } finally {
      clearTimeout(timer);
      this.probing.delete(id);
    }
  }

  /** Ends every probe (the activator stops). */
  close(): void {
    for (const c of this.probing.values()) c.abort();
  }
}
