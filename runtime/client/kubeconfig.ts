/**
 * The user's kubeconfig, as kubectl finds it: `--kubeconfig`, else `$KUBECONFIG` (a list of
 * files), else `~/.kube/config`; `--context` picks a context. client-node is loaded here, only
 * for cluster targets: its generated API is large and `mur send <url>` never needs it.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { MurError } from '../errors.ts';

export type ClientNode = typeof import('@kubernetes/client-node');
export const clientNode = (): ClientNode => createRequire(import.meta.url)('@kubernetes/client-node') as ClientNode;

export function loadKubeConfig(o: { file?: string; context?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const k8s = clientNode();
  const kc = new k8s.KubeConfig();
  const where = o.file ?? (env.KUBECONFIG ? '$KUBECONFIG' : join(homedir(), '.kube', 'config'));
  try {
    if (o.file) kc.loadFromFile(o.file);
    else if (env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) kc.loadFromDefault();
    // In a pod (a CI job, a debug container): the pod's own ServiceAccount, as kubectl does.
    else if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else throw new Error('no kubeconfig: --kubeconfig, $KUBECONFIG and ~/.kube/config all absent, and not in a pod');
  } catch (e) {
    throw new MurError('E-CLI-039', `cannot load the kubeconfig (${where}): ${(e as Error).message}`, {
      ...(o.file ? { location: { file: o.file } } : {}),
      hint: 'the kubeconfig kubectl uses: --kubeconfig FILE or $KUBECONFIG',
    });
  }
  if (o.context) {
    if (!kc.getContextObject(o.context)) {
      throw new MurError('E-CLI-039', `the kubeconfig (${where}) has no context '${o.context}'`, {
        hint: `one of: ${
          kc
            .getContexts()
            .map((c) => c.name)
            .join(', ') || '(none)'
        }`,
      });
    }
    kc.setCurrentContext(o.context);
  }
  if (!kc.getCurrentCluster())
    throw new MurError('E-CLI-039', `the kubeconfig (${where}) names no current cluster`, { hint: 'kubectl config use-context <name>, or --context' });
  return kc;
}

/** The namespace of the current context, as kubectl defaults it. */
export function contextNamespace(kc: KubeConfig): string {
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

/** The API server's own words from a client-node ApiException (its Status body), else the error's first line. */
export function apiMessage(e: unknown): string {
  const body = (e as { body?: unknown }).body;
  try {
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: unknown } | undefined;
    if (typeof status?.message === 'string') return status.message;
  } catch {
    // not a Status body
  }
  return String((e as Error).message ?? e)
    .split('\n')[0]!
    .slice(0, 300);
}
