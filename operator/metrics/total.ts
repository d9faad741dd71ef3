/**
 * The sum of a metric's samples in a prom-client registry, filtered by labels: how tests read a
 * counter of the operator's or the activator's private registry without parsing the exposition
 * text. One helper so both registries answer the same question the same way.
 */
import type { Registry } from 'prom-client';

/**
 * Sum of the values of `name` whose labels include every pair of `labels` (none: all of them); 0
 * when the registry has no such metric. On a histogram this adds buckets, sum and count alike, so
 * read a histogram's samples directly instead.
 */
export async function metricTotal(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  if (!m) return 0;
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}
