/** /metrics, /healthz and /readyz on one port. */
import http from 'node:http';
import type { OperatorMetrics } from './metrics.ts';

export interface Probe {
  healthy(): boolean;
  /** May ask the API server (operator.ts), so it may take a moment. */
  ready(): boolean | Promise<boolean>;
}

export function startHttpServer(port: number, metrics: OperatorMetrics, probe: Probe, host = '0.0.0.0'): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (url === '/metrics') {
      metrics.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
          res.end(text);
        })
        .catch((e: Error) => {
          res.writeHead(500);
          res.end(e.message);
        });
      return;
    }
    if (url === '/healthz' || url === '/readyz') {
      Promise.resolve(url === '/healthz' ? probe.healthy() : probe.ready())
        .catch(() => false)
        .then((ok) => {
          res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' });
          res.end(ok ? 'ok\n' : 'not ready\n');
        });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
