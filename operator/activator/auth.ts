/**
 * The second fence: the caller must authenticate as the capsule would make it (runtime/a2a/server/
 * auth.ts), before anything wakes it. `spec.a2a.auth.anonymous` serves callers without
 * credentials; a bearer token must be a ServiceAccount token the API server authenticates for the
 * capsule's own URL (`status.a2aUrl`) as audience, by a TokenReview, exactly the review the
 * capsule's pods run. A bearer API key of a Capsule that takes them (`spec.a2a.auth.apiKeys`) is
 * checked first, as the runtime checks it first: its HMAC under the activator key (key.ts) must be
 * among the digests the operator published in `status.sleep.apiKeyDigests`
 * (runtime/contracts/api-key.ts), so the activator never reads the Secret and the digests are of
 * no use to anyone without the activator key.
 *
 * The review goes through the operator's own API client (operator/kube/client.ts), not
 * client-node's AuthenticationV1Api: in a pod that client never loads client-node (≈ 80 MiB RSS),
 * and a TokenReview is one POST. Verdicts are kept 10 s, keyed by the token's SHA-256 and the
 * audience, so a caller retrying while the capsule wakes costs one review.
 */
import { createHash } from 'node:crypto';
import { matchesApiKeyDigest } from '../../runtime/contracts/api-key.ts';
import { reviewedUser, type TokenReviewStatus, tokenReviewBody } from '../../runtime/contracts/in-cluster.ts';
import type { Capsule } from '../api/types.ts';
import type { KubeClient } from '../kube/client.ts';
import { CODES, type Refusal, refusal } from './errors.ts';

const CACHE_MS = 10_000;
const CACHE_MAX = 1000;

/** Asks the API server whether `token` is valid for `audience`. */
export type Reviewer = (token: string, audience: string) => Promise<TokenReviewStatus | undefined>;

export function tokenReviewer(client: KubeClient): Reviewer {
  return async (token, audience) => {
    const review = await client.request<{ status?: TokenReviewStatus }>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      body: tokenReviewBody(token, audience),
    });
    return review.status;
  };
}

function bearerOf(header: string | string[] | undefined): string | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(v);
  return m ? m[1]! : '';
}

/** The URL the capsule's runtime serves as (`--public-url`): the audience its tokens are made for. */
export const publicUrlOf = (a2aUrl: string): string => (a2aUrl.endsWith('/') ? a2aUrl : `${a2aUrl}/`);

const unauthenticated = (c: Capsule, why: string): Refusal =>
  refusal('unauthenticated', 401, `${why}: capsule ${c.metadata.namespace}/${c.metadata.name} was not woken`, CODES.unauthenticated);

export class Authenticator {
  private readonly cache = new Map<string, { at: number; ok: boolean }>();

  constructor(
    private readonly review: Reviewer,
    /** The activator key; absent: no API key is taken. */
    private readonly apiKeyDigestKey?: Uint8Array,
  ) {}

  /** undefined: the capsule would serve this caller; else the 401 to answer. */
  async check(c: Capsule, authorization: string | string[] | undefined): Promise<Refusal | undefined> {
    const auth = c.spec.a2a?.auth ?? {};
    const token = bearerOf(authorization);
    if (token === undefined) return auth.anonymous ? undefined : unauthenticated(c, 'authentication required: send Authorization: Bearer <token>');
    // The runtime's audience is its --public-url, the Service URL with a trailing slash
    // (translate/index.ts); status.a2aUrl is written without one.
    const audience = c.status?.a2aUrl ? publicUrlOf(c.status.a2aUrl) : undefined;
    if (!token) return unauthenticated(c, 'invalid credentials');
    // The runtime's order (runtime/a2a/server/auth.ts): an API key first, then a ServiceAccount token.
    if (this.apiKey(c, token)) return undefined;
    // A ServiceAccount token is a JWT.
    if (auth.serviceAccounts === false || !audience || token.split('.').length !== 3) return unauthenticated(c, 'invalid credentials');
    return (await this.verify(token, audience)) ? undefined : unauthenticated(c, 'invalid credentials');
  }

  /** Whether `token` is one of the capsule's API keys, by the digests the operator published. */
  private apiKey(c: Capsule, token: string): boolean {
    const digests = c.spec.a2a?.auth?.apiKeys ? c.status?.sleep?.apiKeyDigests : undefined;
    return !!this.apiKeyDigestKey && !!digests?.length && matchesApiKeyDigest(this.apiKeyDigestKey, token, digests);
  }

  private async verify(token: string, audience: string): Promise<boolean> {
    const k = createHash('sha256').update(token).update('\0').update(audience).digest('hex');
    const hit = this.cache.get(k);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.ok;
    const st = await this.review(token, audience).catch(() => undefined);
    const ok = reviewedUser(st, audience) !== undefined;
    // A failed review (API server unreachable) is not remembered: the next try asks again.
    if (st) {
      this.cache.set(k, { at: Date.now(), ok });
      if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
    }
    return ok;
  }
}
