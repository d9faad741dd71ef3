import type { Capsule, KubeObject } from '../../api/types.ts';
import { meta, names } from './common.ts';

export function buildConfigMap(c: Capsule, murmurYaml: string): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(c, names(c).configMap), data: { 'murmur.yaml': murmurYaml } };
}
