/**
 * The body of `/metrics` (served by `mur serve` on --metrics-port, a port apart from A2A so a
 * NetworkPolicy can open one and not the other): the runtime's own prom-client registry, in the
 * Prometheus text format 0.0.4. Label values come from trace events, which are already redacted;
 * the body is redacted once more as a whole (runtime/secrets.ts) so no other label path can carry
 * a secret out.
 */
import { redact } from '../secrets.ts';
import { runtimeMetrics } from './metrics.ts';

export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  const r = runtimeMetrics().registry;
  return { contentType: r.contentType, body: redact(await r.metrics()) };
}
