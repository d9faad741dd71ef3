/** The operator's own Prometheus metrics (prom-client), on a private registry. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { metricTotal } from '../metrics/total.ts';

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: 'capsule_operator_reconcile_total',
    help: 'Reconciles by result (success, blocked, error).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: 'capsule_operator_reconcile_errors_total',
    help: 'Reconciles that failed and were requeued with backoff.',
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'capsule_operator_reconcile_duration_seconds',
    help: 'Time to reconcile one Capsule.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly writes = new Counter({
    name: 'capsule_operator_writes_total',
    help: 'API writes by verb (apply, delete, status, event, usage).',
    labelNames: ['verb'] as const,
    registers: [this.registry],
  });
  readonly usageScrapes = new Counter({
    name: 'capsule_operator_usage_scrapes_total',
    help: "Scrapes of capsule pods' /metrics for status.usage, by result (ok, error).",
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly idleScrapes = new Counter({
    name: 'capsule_operator_idle_scrapes_total',
    help: "Scrapes of sleep-enabled capsule pods' capsule_idle_seconds, by result (ok, error).",
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly sleeps = new Counter({
    name: 'capsule_operator_sleeps_total',
    help: 'Capsules put to sleep (scaled to zero) after their idle time.',
    registers: [this.registry],
  });
  readonly wakes = new Counter({
    name: 'capsule_operator_wakes_total',
    help: 'Sleeping Capsules woken that reached a ready pod again.',
    registers: [this.registry],
  });
  readonly wakeSeconds = new Histogram({
    name: 'capsule_operator_wake_seconds',
    help: "From a sleeping Capsule's WakeRequested Event to its first ready pod.",
    buckets: [0.5, 1, 2, 3, 4, 6, 8, 12, 20, 30, 60, 120],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({ name: 'capsule_operator_queue_depth', help: 'Keys waiting in the work queue.', registers: [this.registry] });
  readonly leader = new Gauge({ name: 'capsule_operator_is_leader', help: '1 when this replica holds the leader Lease.', registers: [this.registry] });
  readonly capsules = new Gauge({ name: 'capsule_operator_capsules', help: 'Capsules in the cache.', registers: [this.registry] });

  constructor(defaults = true) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: 'capsule_operator_' });
  }

  /** Sum of a metric's values with these labels (tests): `metrics/total.ts`. */
  total(name: string, labels: Record<string, string> = {}): Promise<number> {
    return metricTotal(this.registry, name, labels);
  }
}
