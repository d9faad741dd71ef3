/**
 * The one reading of a metric's total that the operator's and the activator's registries share
 * (operator/metrics/total.ts): real prom-client registries, no API server.
 */
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ActivatorMetrics } from '../../../operator/activator/metrics.ts';
import { OperatorMetrics } from '../../../operator/controller/metrics.ts';
import { metricTotal } from '../../../operator/metrics/total.ts';

describe('metricTotal', () => {
  it('sums the samples whose labels include every given pair, all of them without labels', async () => {
    const registry = new Registry();
    const c = new Counter({ name: 't_total', help: 't', labelNames: ['verb', 'kind'] as const, registers: [registry] });
    c.inc({ verb: 'apply', kind: 'Pod' }, 2);
    c.inc({ verb: 'apply', kind: 'Service' }, 3);
    c.inc({ verb: 'delete', kind: 'Pod' }, 5);
    expect(await metricTotal(registry, 't_total')).toBe(10);
    expect(await metricTotal(registry, 't_total', { verb: 'apply' })).toBe(5);
    expect(await metricTotal(registry, 't_total', { verb: 'apply', kind: 'Pod' })).toBe(2);
    expect(await metricTotal(registry, 't_total', { verb: 'status' })).toBe(0);
  });

  it('is 0 for a metric the registry does not hold', async () => {
    expect(await metricTotal(new Registry(), 'nothing_total')).toBe(0);
  });

  it("answers both the operator's and the activator's total() from their own registry", async () => {
    const op = new OperatorMetrics(false);
    const act = new ActivatorMetrics(false);
    op.writes.inc({ verb: 'apply' }, 4);
    op.writes.inc({ verb: 'status' });
    act.refusals.inc({ reason: 'wake_timeout' }, 3);
    expect(await op.total('capsule_operator_writes_total', { verb: 'apply' })).toBe(4);
    expect(await op.total('capsule_operator_writes_total')).toBe(5);
    expect(await act.total('capsule_activator_refusals_total', { reason: 'wake_timeout' })).toBe(3);
    // each reads its own registry: the other's metric is not there
    expect(await act.total('capsule_operator_writes_total')).toBe(0);
  });
});
