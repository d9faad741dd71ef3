/**
 * A pod's in-cluster credentials for the API server, the few lines client-go's
 * rest.InClusterConfig is: the server at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
 * ServiceAccount's `ca.crt` to trust it, its `token` as bearer, read again whenever the kubelet
 * has rotated the file. Shared by the operator's API client (operator/kube/client.ts) and the
 * runtime's TokenReview (runtime/a2a/server/token-review-in-cluster.ts), neither of which loads
 * client-node in a pod (its generated API costs tens of MiB resident).
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
