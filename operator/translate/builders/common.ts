/** Names, labels and owner references shared by every object built for a Capsule. */
import { createHash } from 'node:crypto';
import { API_VERSION, type Capsule, type KubeObject, type OwnerReference } from '../../api/types.ts';

export const FIELD_MANAGER = 'capsule-operator';
export const LABEL_CAPSULE = 'murmur.io/capsule';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const ANNOTATION_CONFIG_HASH = 'murmur.io/config-hash';

/** Container ports of the runtime (fixed: the Service maps spec.servicePort onto A2A_PORT). */
export const A2A_PORT = 8080;
export const METRICS_PORT = 9090;
export const CONFIG_DIR = '/etc/murmur/capsule';
export const WORKDIR = '/var/lib/murmur';

export const names = (c: Capsule) => ({
  deployment: c.metadata.name,
  service: c.metadata.name,
  serviceAccount: c.metadata.name,
  configMap: `${c.metadata.name}-manifest`,
  egress: `${c.metadata.name}-egress`,
  ingress: `${c.metadata.name}-ingress`,
  disruptionBudget: c.metadata.name,
  storeClaim: `${c.metadata.name}-store`,
  activatorSlice: `${c.metadata.name}-activator`,
});

export function selectorLabels(c: Capsule): Record<string, string> {
  return { 'app.kubernetes.io/name': 'capsule', [LABEL_CAPSULE]: c.metadata.name };
}

export function labels(c: Capsule): Record<string, string> {
  return {
    ...selectorLabels(c),
    'app.kubernetes.io/instance': c.metadata.name,
    'app.kubernetes.io/component': 'capsule',
    [LABEL_MANAGED_BY]: FIELD_MANAGER,
  };
}

export function ownerRef(c: Capsule): OwnerReference {
  return { apiVersion: API_VERSION, kind: 'Capsule', name: c.metadata.name, uid: c.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

export function meta(c: Capsule, name: string, extra: { annotations?: Record<string, string> } = {}): KubeObject['metadata'] {
  return {
    name,
    namespace: c.metadata.namespace ?? 'default',
    labels: labels(c),
    ...(extra.annotations ? { annotations: extra.annotations } : {}),
    ownerReferences: [ownerRef(c)],
  };
}

/** JSON with sorted keys: the canonical form hashed for config changes. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}
