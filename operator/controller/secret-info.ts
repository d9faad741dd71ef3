/**
 * What the controller keeps of a Secret (its informer's transform): the key names translate checks,
 * and, when the operator has an activator key (activator/key.ts), the API-key digests of its values
 * (runtime/contracts/api-key.ts), computed where the values pass by so that no value stays in the
 * cache. Every Secret gets them: any Secret may become a Capsule's API keys later, when a spec
 * names it, and the cache is not listed again then.
 */
import { secretApiKeyDigests } from '../../runtime/contracts/api-key.ts';
import type { Capsule, KubeObject, SecretInfo } from '../api/types.ts';
import type { Informer } from '../kube/informer.ts';

export const secretInfo =
  (activatorKey: Uint8Array | undefined) =>
  // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
  (o: any): SecretInfo & KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: o.metadata.name, namespace: o.metadata.namespace, resourceVersion: o.metadata.resourceVersion, uid: o.metadata.uid },
    name: o.metadata.name,
    resourceVersion: o.metadata.resourceVersion,
    keys: Object.keys(o.data ?? {}).sort(),
    ...(activatorKey ? { apiKeyDigests: secretApiKeyDigests(activatorKey, o.data) } : {}),
  });

/** The digests of the API keys `c` takes: none while its Secret is missing; undefined when it takes none. */
export function apiKeyDigestsOf(c: Capsule, secrets: Informer<SecretInfo & KubeObject>): string[] | undefined {
  const name = c.spec.a2a?.auth?.apiKeys?.secretName;
  if (!name) return undefined;
  return secrets.get(`${c.metadata.namespace ?? 'default'}/${name}`)?.apiKeyDigests ?? [];
}
