/**
 * The EndpointSlice `<capsule>-activator` of a sleep-enabled Capsule: the activator's pods as extra
 * endpoints of the capsule's own Service, so callers keep calling the Service while it sleeps.
 * kube-proxy merges every slice labelled `kubernetes.io/service-name: <service>`; the EndpointSlice
 * controller leaves alone a slice another manager's label claims. One port, named like the
 * Service's `a2a` port (kube-proxy matches ports by name) and numbered as the activator listens, so
 * the metrics port never reaches the activator.
 *
 * Its endpoints are ready exactly when the capsule has no ready pod (asleep, or waking): then the
 * Service sends callers to the activator, which holds them until a pod is ready; while a pod is
 * ready they are not ready, and traffic goes to the pods alone.
 */
import { isIPv4 } from 'node:net';
import type { Capsule, KubeObject } from '../../api/types.ts';
import type { ActivatorOptions } from '../options.ts';
import type { SleepInput } from '../sleep.ts';
import { labels, names, ownerRef } from './common.ts';

export const SLICE_MANAGER = 'capsule-operator.murmur.dev';

export function buildActivatorSlice(c: Capsule, activator: ActivatorOptions, sleep: SleepInput | undefined): KubeObject {
  const n = names(c);
  const ready = (sleep?.readyPods ?? 0) === 0;
  // Sorted and unique: the same IPs in another order are the same slice (no write, no churn). IPv4
  // only: the API server refuses another address in an IPv4 slice, which would stop every write.
  const ips = [...new Set(sleep?.activatorIPs ?? [])].filter((ip) => isIPv4(ip)).sort();
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: n.activatorSlice,
      namespace: c.metadata.namespace ?? 'default',
      // The capsule's labels too: the operator finds (and prunes) what it owns by them.
      labels: { ...labels(c), 'kubernetes.io/service-name': n.service, 'endpointslice.kubernetes.io/managed-by': SLICE_MANAGER },
      ownerReferences: [ownerRef(c)],
    },
    addressType: 'IPv4',
    ports: [{ name: 'a2a', port: activator.port, protocol: 'TCP' }],
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready } })),
  };
}
