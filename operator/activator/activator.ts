/**
 * Starts the activator: the caches (cache.ts), the gate (gate.ts), the HTTP/1.1 + h2c port
 * (listener.ts) and the metrics/health port (/metrics, /healthz, /readyz: ready once every informer
 * has listed). main.ts reads the configuration from the environment; tests call this directly.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { KubeClient } from '../kube/client.ts';
import { Authenticator, type Reviewer, tokenReviewer } from './auth.ts';
import { ActivatorCache, serviceKey } from './cache.ts';
import { type Endpoint, EndpointWaits } from './endpoints.ts';
import { ServingProbes } from './serving-probe.ts';
import { Gate } from './gate.ts';
import { Http1Front } from './http1.ts';
import { Http2Front } from './http2.ts';
import { dualServer } from './listener.ts';
import { ActivatorMetrics } from './metrics.ts';
import { Waker } from './wake.ts';

export interface ActivatorConfig {
  client: KubeClient;
  /** Namespaces whose Capsules it serves (the operator's watchNamespaces); empty = all. */
  namespaces: string[];
  /** The request port (8012; 0 = any free one). */
  port: number;
  /** /metrics, /healthz, /readyz (0 = any free one). */
  metricsPort: number;
  host?: string;
  holdSeconds: number;
  clusterDomain?: string;
  /** The reporting instance of its Events (the pod's name). */
  identity: string;
  log: (m: string) => void;
  /** prom-client's process metrics (off in tests, which start many activators in one process). */
  defaultMetrics?: boolean;
  /**
   * The activator key (key.ts; main.ts always has one): bearer API keys are checked against a
   * Capsule's status.sleep.apiKeyDigests with it. Absent: API keys are refused, as before there was one.
   */
  apiKeyDigestKey?: Uint8Array;
  /** Tests: another TokenReview client. */
  reviewer?: Reviewer;
  /** Tests: where a pod's address is dialled (an EndpointSlice may not hold a loopback address). */
  dial?: (e: Endpoint) => Endpoint;
}

export interface Activator {
  port: number;
  metricsPort: number;
  metrics: ActivatorMetrics;
  /** Resolves once every informer has listed (what /readyz reports). */
  synced(): Promise<void>;
  /**
   * Stops taking connections, lets the requests it holds or forwards end (at most `graceMs`: a
   * held request still wakes and is delivered), then closes the rest and its caches.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Requests and streams not yet answered, for a graceful stop. */
class InFlight {
  private n = 0;
  private waiters: Array<() => void> = [];
  add(e: { once(ev: 'close', f: () => void): unknown }): void {
    this.n++;
    e.once('close', () => {
      if (--this.n === 0) for (const w of this.waiters.splice(0)) w();
    });
  }
  idle(): Promise<void> {
    return this.n === 0 ? Promise.resolve() : new Promise((r) => this.waiters.push(r));
  }
}

function listen(server: http.Server | import('node:net').Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

function probeServer(metrics: ActivatorMetrics, ready: () => boolean): http.Server {
  return http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (url === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (e: Error) => res.writeHead(500).end(e.message),
      );
      return;
    }
    if (url === '/healthz' || url === '/readyz') {
      const ok = url === '/healthz' || ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'informers not synced\n');
      return;
    }
    res.writeHead(404).end();
  });
}

export async function startActivator(cfg: ActivatorConfig): Promise<Activator> {
  const host = cfg.host ?? '0.0.0.0';
  const metrics = new ActivatorMetrics(cfg.defaultMetrics ?? true);
  const cache = new ActivatorCache(cfg.client, cfg.namespaces, cfg.log);
  const waits = new EndpointWaits();
  cache.slices.on((_type, s) => {
    const k = serviceKey(s);
    if (k) waits.changed(k);
  });
  const serving = new ServingProbes((k) => waits.changed(k));
  const gate = new Gate({
    cache,
    auth: new Authenticator(cfg.reviewer ?? tokenReviewer(cfg.client), cfg.apiKeyDigestKey),
    waker: new Waker(cfg.client, cfg.identity, cfg.log, () => metrics.wakes.inc()),
    waits,
    metrics,
    holdMs: cfg.holdSeconds * 1000,
    clusterDomain: cfg.clusterDomain ?? 'cluster.local',
    ...(cfg.dial ? { dial: cfg.dial } : {}),
    log: cfg.log,
    probes: serving,
  });
  const h1 = new Http1Front(gate, cfg.log);
  const h2 = new Http2Front(gate, cfg.log);
  const inflight = new InFlight();
  const h1Server = http.createServer((req, res) => {
    inflight.add(res);
    h1.handle(req, res);
  });
  // A held request waits up to the bound before its answer starts: no request timeout shorter than that.
  h1Server.requestTimeout = 0;
  const h2Server = http2.createServer();
  h2Server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    inflight.add(stream);
    h2.handle(stream, headers);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  h2Server.on('session', (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  const front = dualServer(h1Server, h2Server);
  const probes = probeServer(metrics, () => cache.synced);
  cache.start();
  const port = await listen(front, cfg.port, host);
  const metricsPort = await listen(probes, cfg.metricsPort, host);
  cfg.log(`capsule-activator listening on :${port} (HTTP/1.1 and h2c), metrics on :${metricsPort}`);
  return {
    port,
    metricsPort,
    metrics,
    synced: () => cache.waitForSync(),
    async stop(graceMs = 0) {
      front.close();
      h1Server.closeIdleConnections();
      for (const s of sessions) s.close(); // GOAWAY: its open streams may still end
      if (graceMs > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([inflight.idle(), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
        clearTimeout(timer);
      }
      probes.close();
      serving.close();
      h1Server.closeAllConnections();
      for (const s of sessions) s.destroy();
      for (const s of [h1Server, h2Server]) s.close();
      h2.close();
      await cache.stop();
    },
  };
}
