import type { Capsule, KubeObject } from '../../api/types.ts';
import { meta, names } from './common.ts';

/** The capsule's own identity; no API token is mounted (the runtime never talks to the API server). */
export function buildServiceAccount(c: Capsule): KubeObject {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(c, names(c).serviceAccount), automountServiceAccountToken: false };
}
