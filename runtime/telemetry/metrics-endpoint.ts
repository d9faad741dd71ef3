/**
 * The body of `/metrics` (served by `mur serve` on --metrics-port, a port apart from A2A so a
 * NetworkPolicy can open one and not the other): the runtime's own prom-client registry, in the
 * Prometheus text format 0.0.4.
 */
import { runtimeMetrics } from './metrics.ts';

export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  const r = runtimeMetrics().registry;
  return { contentType: r.contentType, body: await r.metrics() };
}
