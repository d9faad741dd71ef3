/**
 * Kubernetes ServiceAccount tokens, verified with a TokenReview against the API server (through
 * @kubernetes/client-node, which reads the in-cluster or kubeconfig credentials). A token counts
 * only when the API server says it is authenticated *for this agent's URL as audience*: a token
 * projected for another capsule, an expired one or a revoked one (its pod or ServiceAccount gone)
 * is refused. The caller's name is the token's username (`system:serviceaccount:<ns>:<name>`).
 *
 * Asking the API server (rather than checking the JWT against its OIDC keys locally) also catches
 * revocation; results are kept for `cacheMs` so a busy caller costs one review per window.
 *
 * In a pod (the in-cluster credentials mounted) the review is one HTTPS request of its own
 * (token-review-in-cluster.ts, which says why); with a kubeconfig it goes through client-node.
 */
import { createHash } from 'node:crypto';
import type { AuthenticationV1Api, KubeConfig } from '@kubernetes/client-node';
import type { TokenVerifier } from './auth.ts';
import { reviewedUser, type TokenReviewStatus, tokenReviewBody } from '../../contracts/in-cluster.ts';
import { inClusterFromEnv, inClusterReviewer, type InCluster } from './token-review-in-cluster.ts';

type ClientNode = typeof import('@kubernetes/client-node');

export interface TokenReviewOptions {
  /** The audience the token must carry: this agent's public URL. */
  audience: string;
  /** Credentials for the API server through client-node. Default: in-cluster, else $KUBECONFIG / ~/.kube/config. */
  kubeConfig?: KubeConfig;
  /** The in-cluster credentials to use instead of client-node. Default: the pod's own, when mounted and no kubeConfig is given. */
  inCluster?: InCluster;
  /** How long a verdict is reused. Default 10 s; 0 = ask every time. */
  cacheMs?: number;
}

export function tokenReviewVerifier(o: TokenReviewOptions): TokenVerifier {
  const inCluster = o.inCluster ?? (o.kubeConfig ? undefined : inClusterFromEnv());
  const review = inCluster ? inClusterReviewer(inCluster) : clientNodeReviewer(o.kubeConfig);
  const cacheMs = o.cacheMs ?? 10_000;
  const cache = new Map<string, { at: number; verdict: { username: string } | undefined }>();
  return {
    async verify(token) {
      const k = createHash('sha256').update(token).digest('hex');
      const hit = cache.get(k);
      if (hit && Date.now() - hit.at < cacheMs) return hit.verdict;
      const username = reviewedUser(await review(token, o.audience), o.audience);
      const verdict = username ? { username } : undefined;
      if (cacheMs > 0) {
        cache.set(k, { at: Date.now(), verdict });
        if (cache.size > 1000) cache.delete(cache.keys().next().value!);
      }
      return verdict;
    },
  };
}

/** Reviews through client-node, with a kubeconfig's credentials. */
function clientNodeReviewer(kubeConfig: KubeConfig | undefined): (token: string, audience: string) => Promise<TokenReviewStatus | undefined> {
  // The library is imported here, when token review is asked for, not at module load: every
  // `mur serve` imports this module, and client-node costs ≈ 27 MiB of heap (≈ 60 MiB RSS,
  // measured) in a process that without --token-review never calls it. The import starts now, so
  // the first token waits for it only when it comes before the import is done.
  const client: Promise<AuthenticationV1Api> = import('@kubernetes/client-node').then((k) =>
    (kubeConfig ?? defaultKubeConfig(k)).makeApiClient(k.AuthenticationV1Api),
  );
  client.catch(() => {}); // surfaces on the first verify
  return async (token, audience) => (await (await client).createTokenReview({ body: tokenReviewBody(token, audience) })).status;
}

function defaultKubeConfig(k: ClientNode): KubeConfig {
  const kc = new k.KubeConfig();
  if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}
