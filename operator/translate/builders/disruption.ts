/**
 * Keeping a capsule's pods apart and some of them up through voluntary disruptions (a node drain,
 * a cluster upgrade): a PodDisruptionBudget for a Capsule of more than one replica, and topology
 * spread constraints on every pod template.
 *
 * The budget is what makes a drain safe: the eviction API refuses to evict a pod while another of
 * the capsule's pods is unavailable, so a drain never takes them all at once; it waits for the
 * replacement to be ready elsewhere. One replica gets none: a budget that kept its only pod would
 * block every drain, and one that allows evicting it protects nothing. Pods that are not ready (a
 * crash loop) may always be evicted (`unhealthyPodEvictionPolicy: AlwaysAllow`), so a broken
 * capsule never blocks a drain either.
 *
 * The spread is on every template, whatever `replicas` is, so scaling (kubectl scale, an HPA on
 * /scale) never changes the template and never rolls the pods. It is a preference
 * (`ScheduleAnyway`): a hard rule would leave a pod Pending on a cluster with fewer nodes (or
 * zones) than replicas, or while a drained node is cordoned; the budget, not the spread, is the
 * guarantee.
 */
import type { Capsule, KubeObject } from '../../api/types.ts';
import { meta, names, selectorLabels } from './common.ts';

export function topologySpread(c: Capsule): Record<string, unknown>[] {
  const spread = (topologyKey: string) => ({
    maxSkew: 1,
    topologyKey,
    whenUnsatisfiable: 'ScheduleAnyway',
    labelSelector: { matchLabels: selectorLabels(c) },
    // Count only the pods of the same rollout: old ones about to go do not skew the new ones' placement.
    matchLabelKeys: ['pod-template-hash'],
  });
  return [spread('kubernetes.io/hostname'), spread('topology.kubernetes.io/zone')];
}

/** The capsule's PodDisruptionBudget, or none for fewer than two replicas. */
export function buildDisruptionBudget(c: Capsule): KubeObject | undefined {
  if ((c.spec.replicas ?? 1) < 2) return undefined;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: meta(c, names(c).disruptionBudget),
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: selectorLabels(c) },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}
