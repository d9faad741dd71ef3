/**
 * Kubernetes ServiceAccount tokens, verified with a TokenReview against the API server (through
 * @kubernetes/client-node, which reads the in-cluster or kubeconfig credentials). A token counts
 * only when the API server says it is authenticated *for this agent's URL as audience*: a token
 * projected for another capsule, an expired one or a revoked one (its pod or ServiceAccount gone)
 * is refused. The caller's name is the token's username (`system:serviceaccount:<ns>:<name>`).
 *
 * Asking the API server (rather than checking the JWT against its OIDC keys locally) also catches
 * revocation; results are kept for `cacheMs` so a busy caller costs one review per window.
 */
import { createHash } from 'node:crypto';
import { AuthenticationV1Api, KubeConfig } from '@kubernetes/client-node';
import type { TokenVerifier } from './auth.ts';

export interface TokenReviewOptions {
  /** The audience the token must carry: this agent's public URL. */
  audience: string;
  /** Credentials for the API server. Default: in-cluster, else $KUBECONFIG / ~/.kube/config. */
  kubeConfig?: KubeConfig;
  /** How long a verdict is reused. Default 10 s; 0 = ask every time. */
  cacheMs?: number;
}

export function tokenReviewVerifier(o: TokenReviewOptions): TokenVerifier {
  const kc = o.kubeConfig ?? defaultKubeConfig();
  const api = kc.makeApiClient(AuthenticationV1Api);
  const cacheMs = o.cacheMs ?? 10_000;
  const cache = new Map<string, { at: number; verdict: { username: string } | undefined }>();
  return {
    async verify(token) {
      const k = createHash('sha256').update(token).digest('hex');
      const hit = cache.get(k);
      if (hit && Date.now() - hit.at < cacheMs) return hit.verdict;
      const review = await api.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: [o.audience] } },
      });
      const st = review.status;
      const ok = st?.authenticated === true && (st.audiences ?? []).includes(o.audience) && !!st.user?.username;
      const verdict = ok ? { username: st!.user!.username! } : undefined;
      if (cacheMs > 0) {
        cache.set(k, { at: Date.now(), verdict });
        if (cache.size > 1000) cache.delete(cache.keys().next().value!);
      }
      return verdict;
    },
  };
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  if (process.env['KUBERNETES_SERVICE_HOST']) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}
