/**
 * Where the operator's cluster connection comes from, decided the way @kubernetes/client-node's
 * `loadFromDefault` decides it ($KUBECONFIG files, then ~/.kube/config, then the in-cluster
 * ServiceAccount) — except that when none exists, client-node silently falls back to
 * `http://localhost:8080`, and the operator would log "up" and retry leader election forever
 * against nothing. This names the missing cluster instead, so a pod or container without one
 * fails at start with a message saying what it looked for.
 */
import { delimiter, join } from 'node:path';
import { SERVICE_ACCOUNT_DIR } from '../../runtime/contracts/in-cluster.ts';

export const SERVICE_ACCOUNT_TOKEN = join(SERVICE_ACCOUNT_DIR, 'token');

export type ClusterSource = { kind: 'kubeconfig'; files: string[] } | { kind: 'in-cluster'; host: string } | { kind: 'none'; looked: string[] };

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
  // CAPSULE_OPERATOR_SERVICE_ACCOUNT_DIR: where the token and CA are, when not at the kubelet's path (bench/operator.ts).
  const token = env.CAPSULE_OPERATOR_SERVICE_ACCOUNT_DIR ? join(env.CAPSULE_OPERATOR_SERVICE_ACCOUNT_DIR, 'token') : SERVICE_ACCOUNT_TOKEN;
  if (env.KUBERNETES_SERVICE_HOST && exists(token)) return { kind: 'in-cluster', host: env.KUBERNETES_SERVICE_HOST };
  looked.push(
    env.KUBERNETES_SERVICE_HOST
      ? `in-cluster: ${token} (no such file: no ServiceAccount token mounted)`
      : 'in-cluster: KUBERNETES_SERVICE_HOST (not set: not running in a pod)',
  );
  return { kind: 'none', looked };
}

/** The start-up error code for `kind: 'none'` (docs/errors.md). */
export const NO_CLUSTER = 'E-OP-020';

export function noClusterMessage(source: Extract<ClusterSource, { kind: 'none' }>): string {
  return `${NO_CLUSTER} no Kubernetes cluster to connect to; looked for: ${source.looked.join('; ')}. Run the operator in a pod with a ServiceAccount, or set KUBECONFIG.`;
}
