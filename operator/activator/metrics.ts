/** The activator's Prometheus metrics (prom-client), on a private registry served on its metrics port. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { metricTotal } from '../metrics/total.ts';

export class ActivatorMetrics {
  readonly registry = new Registry();
  readonly held = new Gauge({
    name: 'capsule_activator_requests_held',
    help: 'Requests held now, waiting for their capsule to wake.',
    registers: [this.registry],
  });
  readonly wakes = new Counter({
    name: 'capsule_activator_wakes_requested_total',
    help: 'WakeRequested Events created (at most one per capsule per second).',
    registers: [this.registry],
  });
  readonly refusals = new Counter({
    name: 'capsule_activator_refusals_total',
    help: 'Requests not delivered, by reason (unknown_capsule, network_policy, unauthenticated, wake_timeout, body_too_large, no_card, upstream).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly holdSeconds = new Histogram({
    name: 'capsule_activator_hold_seconds',
    help: 'How long a request was held before it was delivered or timed out.',
    labelNames: ['result'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120],
    registers: [this.registry],
  });

  constructor(defaults = true) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: 'capsule_activator_' });
  }

  /** Sum of a metric's values with these labels (tests): `metrics/total.ts`. */
  total(name: string, labels: Record<string, string> = {}): Promise<number> {
    return metricTotal(this.registry, name, labels);
  }
}
