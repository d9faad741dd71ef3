/**
 * A TokenReview sent from inside a pod with the pod's own ServiceAccount: one HTTPS POST to the
 * API server with the in-cluster credentials (runtime/contracts/in-cluster.ts, which the
 * operator's API client reads the same way).
 *
 * Why not client-node here, as everywhere else: every capsule pod reviews its callers' tokens, and
 * client-node costs a capsule pod ≈ 10–15 MiB resident for as long as it lives (its generated
 * models and serializer stay on the heap, its bundled source beside them) and ≈ 100 ms of CPU at
 * each start — a start that is on the path of every wake of a sleeping Capsule. This request is
 * the one call the runtime makes there, and its wire form is a stable v1 API. Outside a pod
 * (a kubeconfig), token-review.ts still goes through client-node.
 */
import { existsSync } from 'node:fs';
import type { Agent } from 'node:https';
import { join } from 'node:path';
import { https } from '../../builtins.ts';
import { SERVICE_ACCOUNT_DIR, ServiceAccountCredentials, type TokenReviewStatus, tokenReviewBody } from '../../contracts/in-cluster.ts';

export interface InCluster {
  host: string;
  port: number;
  /** The folder holding `token` (re-read when the kubelet has rotated it) and `ca.crt`. */
  dir: string;
}

/** The pod's in-cluster credentials, or undefined outside a pod (no service host, or no token and CA mounted). */
export function inClusterFromEnv(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): InCluster | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host || !existsSync(join(dir, 'token')) || !existsSync(join(dir, 'ca.crt'))) return undefined;
  return { host, port: Number(env.KUBERNETES_SERVICE_PORT || 443), dir };
}

/** A bounded answer: a TokenReview's status is a few hundred bytes. */
const MAX_ANSWER = 1 << 20;
const TIMEOUT_MS = 10_000;

/** Sends TokenReviews over one keep-alive connection pool; each call asks the API server once. */
export function inClusterReviewer(c: InCluster): (token: string, audience: string) => Promise<TokenReviewStatus> {
  const credentials = new ServiceAccountCredentials(c.dir, c.host, c.port);
  // node:https (and TLS) at the first review, not at start: builtins.ts says what it costs.
  let agent: Agent | undefined;
  return (token, audience) =>
    new Promise((resolve, reject) => {
      const { Agent, request } = https();
      agent ??= new Agent({ keepAlive: true, maxSockets: 4, ca: credentials.ca });
      const bearer = credentials.bearer();
      const body = JSON.stringify(tokenReviewBody(token, audience));
      const req = request(
        {
          host: credentials.server.hostname.replace(/^\[|\]$/g, ''),
          port: credentials.server.port,
          path: '/apis/authentication.k8s.io/v1/tokenreviews',
          method: 'POST',
          agent,
          timeout: TIMEOUT_MS,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            authorization: `Bearer ${bearer}`,
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (b: Buffer) => {
            size += b.length;
            if (size > MAX_ANSWER) res.destroy(new Error(`TokenReview: the API server's answer passed ${MAX_ANSWER} bytes`));
            else chunks.push(b);
          });
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status < 200 || status > 299) {
              let message = text.slice(0, 200);
              try {
                message = (JSON.parse(text) as { message?: string }).message ?? message;
              } catch {}
              reject(new Error(`TokenReview: the API server answered ${status}: ${message}`));
              return;
            }
            try {
              resolve((JSON.parse(text) as { status?: TokenReviewStatus }).status ?? {});
            } catch (e) {
              reject(new Error(`TokenReview: the API server's answer is not JSON: ${(e as Error).message}`));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`TokenReview: no answer from the API server in ${TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(body);
    });
}
