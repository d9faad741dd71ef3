/**
 * A2A authentication of a capsule's pods: what the runtime container is given so that
 *  - callers must prove who they are (`spec.a2a.auth`; default: ServiceAccount tokens only):
 *    `--token-review` with the pod's own API credentials (a projected token for the API server,
 *    which the chart lets every capsule ServiceAccount use for `tokenreviews: create` only),
 *    `--api-keys` over a mounted Secret, `--anonymous` only where the Capsule says so;
 *  - the capsule can prove who it is to each peer it names: one projected ServiceAccount token per
 *    peer, with the peer's Service URL (exactly its `--public-url`) as audience, in a file named
 *    after the host the runtime will call (runtime/a2a/peers/credentials.ts reads it at each call; the
 *    kubelet rotates it).
 * Pure: the Capsule, its resolved peers and callers in, pod fragments out.
 */
import type { A2AAuthSpec, Capsule } from '../../api/types.ts';
import type { TranslateOptions } from '../options.ts';

/** Where the runtime looks for its peer tokens (runtime/a2a/peers/credentials.ts DEFAULT_PEER_TOKENS_DIR). */
export const PEER_TOKENS_DIR = '/var/run/secrets/murmur/peers';
export const API_KEYS_DIR = '/var/run/secrets/murmur/a2a-api-keys';
/** Where client-node's in-cluster configuration reads the pod's API credentials. */
export const KUBE_API_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Lifetime asked of the kubelet for projected tokens; it refreshes them at 80% of that. */
export const TOKEN_EXPIRATION_SECS = 3600;

/** A peer this capsule calls: the host its allowlist names (a file name) and the peer's own URL (the audience). */
export interface PeerToken {
  host: string;
  audience: string;
}

export interface A2AAuthFragments {
  args: string[];
  env: Record<string, unknown>[];
  volumes: Record<string, unknown>[];
  mounts: Record<string, unknown>[];
}

/** The Capsule's auth settings with the CRD's defaults applied (a Capsule without `spec.a2a` gets them too). */
export function authSettings(c: Capsule): Required<Pick<A2AAuthSpec, 'anonymous' | 'serviceAccounts'>> & A2AAuthSpec {
  const a = c.spec.a2a?.auth ?? {};
  return { ...a, anonymous: a.anonymous ?? false, serviceAccounts: a.serviceAccounts ?? true };
}

/** The ServiceAccount username of a capsule (its pods run as the ServiceAccount named after it). */
export const capsuleUser = (namespace: string, name: string): string => `system:serviceaccount:${namespace}:${name}`;

/**
 * `peers`: one per distinct host (sorted by the caller); `callers`: `<ns>/<name>` of capsules that
 * name this one (trusted: they forward only the trust their own task has).
 */
export function a2aAuth(c: Capsule, peers: PeerToken[], callers: string[]): A2AAuthFragments {
  const auth = authSettings(c);
  const out: A2AAuthFragments = { args: [], env: [], volumes: [], mounts: [] };
  if (auth.serviceAccounts) {
    out.args.push('--token-review');
    // The pod's own credentials for the TokenReview, as the kubelet's automount would give them,
    // but only when needed and with a name that does not change between renders.
    out.volumes.push({
      name: 'kube-api-access',
      projected: {
        defaultMode: 0o444,
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: TOKEN_EXPIRATION_SECS } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    });
    out.mounts.push({ name: 'kube-api-access', mountPath: KUBE_API_DIR, readOnly: true });
  }
  if (auth.apiKeys) {
    out.args.push('--api-keys', API_KEYS_DIR);
    out.volumes.push({ name: 'a2a-api-keys', secret: { secretName: auth.apiKeys.secretName, defaultMode: 0o400 } });
    out.mounts.push({ name: 'a2a-api-keys', mountPath: API_KEYS_DIR, readOnly: true });
  }
  if (auth.anonymous) out.args.push('--anonymous');
  const trusted = [
    ...(auth.serviceAccounts ? [...new Set(callers)].sort().map((k) => capsuleUser(k.split('/')[0]!, k.split('/')[1]!)) : []),
    ...(auth.trustedCallers ?? []),
  ];
  if (trusted.length) out.env.push({ name: 'MURMUR_A2A_TRUSTED_CALLERS', value: [...new Set(trusted)].join(',') });
  if (peers.length) {
    out.env.push({ name: 'MURMUR_A2A_PEER_TOKENS_DIR', value: PEER_TOKENS_DIR });
    out.volumes.push({
      name: 'a2a-peer-tokens',
      projected: {
        defaultMode: 0o400,
        sources: peers.map((p) => ({ serviceAccountToken: { audience: p.audience, expirationSeconds: TOKEN_EXPIRATION_SECS, path: p.host } })),
      },
    });
    out.mounts.push({ name: 'a2a-peer-tokens', mountPath: PEER_TOKENS_DIR, readOnly: true });
  }
  return out;
}

/**
 * Egress to the API server for the TokenReview. NetworkPolicy sees the address after the Service's
 * DNAT on most CNIs, so the rule names the API server's endpoints (chart value
 * `network.apiServer`, or what the chart found in the `kubernetes` EndpointSlice at install) as
 * well as the `kubernetes` Service address for CNIs that match before it.
 */
export function apiServerEgress(opts: TranslateOptions): Record<string, unknown>[] {
  return (opts.apiServer ?? []).map((d) => ({ to: [{ ipBlock: { cidr: d.cidr } }], ports: [{ protocol: 'TCP', port: d.port }] }));
}
