/**
 * A pod's in-cluster credentials for the API server, the few lines client-go's
 * rest.InClusterConfig is: the server at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
 * ServiceAccount's `ca.crt` to trust it, its `token` as bearer, read again whenever the kubelet
 * has rotated the file. Shared by the operator's API client (operator/kube/client.ts) and the
 * runtime's TokenReview (runtime/a2a/server/token-review-in-cluster.ts), neither of which loads
 * client-node in a pod (its generated API costs tens of MiB resident); and the TokenReview itself,
 * which the runtime and the operator's activator send and read alike.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Where the kubelet mounts the ServiceAccount token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export class ServiceAccountCredentials {
  readonly server: URL;
  readonly ca: Buffer;
  #token = '';
  #tokenMtime = -1;

  constructor(
    readonly dir: string,
    host: string,
    port: string | number,
  ) {
    this.server = new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`);
    this.ca = readFileSync(join(dir, 'ca.crt'));
  }

  /** The ServiceAccount's token as it is now (re-read when the file changed). */
  bearer(): string {
    const file = join(this.dir, 'token');
    const m = statSync(file).mtimeMs;
    if (m !== this.#tokenMtime) {
      this.#token = readFileSync(file, 'utf8').trim();
      this.#tokenMtime = m;
    }
    return this.#token;
  }
}

/** The status of a TokenReview, as far as the runtime and the activator read it. */
export interface TokenReviewStatus {
  authenticated?: boolean;
  audiences?: string[];
  user?: { username?: string };
  error?: string;
}

/** The TokenReview asking whether `token` is valid for `audience` (authentication.k8s.io/v1). */
export function tokenReviewBody(token: string, audience: string) {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: [audience] } };
}

/**
 * The caller a TokenReview's status names, or undefined when it does not authenticate the token
 * for `audience`: one rule for the capsule's pods and for the activator in front of a sleeping one.
 */
export function reviewedUser(status: TokenReviewStatus | undefined, audience: string): string | undefined {
  const ok = status?.authenticated === true && (status.audiences ?? []).includes(audience) && !!status.user?.username;
  return ok ? status!.user!.username : undefined;
}
