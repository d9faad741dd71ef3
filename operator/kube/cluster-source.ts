/**
 * Where the operator's cluster connection comes from, decided the way @kubernetes/client-node's
 * `loadFromDefault` decides it ($KUBECONFIG files, then ~/.kube/config, then the in-cluster
 * ServiceAccount) — except that when none exists, client-node silently falls back to
 * `http://localhost:8080`, and the operator would log "up" and retry leader election forever
 * against nothing. This names the missing cluster instead, so a pod or container without one
 * fails at start with a message saying what it looked for.
 */
import { delimiter, join } from 'node:path';

export const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export type ClusterSource =
  | { kind: 'kubeconfig'; files: string[] }
  | { kind: 'in-cluster'; host: string }
  | { kind: 'none'; looked: string[] };

export function clusterSource(env: Record<string, string | undefined>, exists: (path: string) => boolean): ClusterSource {
  const looked: string[] = [];
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(delimiter).filter(Boolean);
    const present = files.filter(exists);
    if (present.length) return { kind: 'kubeconfig', files: present };
    looked.push(`KUBECONFIG=${env.KUBECONFIG} (no such file)`);
  }
  const home = env.HOME || env.USERPROFILE;
  if (home) {
    const file = join(home, '.kube', 'config');
    if (exists(file)) return { kind: 'kubeconfig', files: [file] };
    looked.push(`${file} (no such file)`);
  }
  if (env.KUBERNETES_SERVICE_HOST && exists(SERVICE_ACCOUNT_TOKEN)) return { kind: 'in-cluster', host: env.KUBERNETES_SERVICE_HOST };
  looked.push(
    env.KUBERNETES_SERVICE_HOST
      ? `in-cluster: ${SERVICE_ACCOUNT_TOKEN} (no such file: no ServiceAccount token mounted)`
      : 'in-cluster: KUBERNETES_SERVICE_HOST (not set: not running in a pod)',
  );
  return { kind: 'none', looked };
}

/** The start-up error for `kind: 'none'` (E-OP-020, docs/errors.md). */
export function noClusterMessage(source: Extract<ClusterSource, { kind: 'none' }>): string {
  return `E-OP-020 no Kubernetes cluster to connect to; looked for: ${source.looked.join('; ')}. Run the operator in a pod with a ServiceAccount, or set KUBECONFIG.`;
}
