/**
 * A Capsule as an A2A target: read it with the user's own credentials, require Ready and
 * `status.a2aUrl`, and get a ServiceAccount token whose audience is that URL (TokenRequest on the
 * ServiceAccount the user names, `default` of the capsule's namespace unless told): the capsule's
 * TokenReview accepts exactly that audience (docs/a2a.md). The user's RBAC decides whether they
 * may read the Capsule and create the token; a refusal says which permission was missing.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { MurError } from '../errors.ts';
import { apiMessage, clientNode } from './kubeconfig.ts';

export const CAPSULE_GROUP = 'murmur.io';
export const CAPSULE_VERSION = 'v1alpha1';

interface CapsuleObject {
  metadata?: { name?: string; namespace?: string };
  status?: { a2aUrl?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

export interface ResolvedCapsule {
  name: string;
  namespace: string;
  /** `status.a2aUrl`, the Service URL. */
  a2aUrl: string;
  /** The audience the capsule verifies tokens for: its public URL with the trailing slash. */
  audience: string;
}

function status(e: unknown): number | undefined {
  const c = (e as { code?: unknown }).code;
  return typeof c === 'number' ? c : undefined;
}

/** Transport failures and unexpected answers of the API server, said as such. */
function apiFailure(e: unknown, doing: string): MurError {
  const code = status(e);
  return new MurError('E-CLI-039', `the API server failed while ${doing}${code ? ` (HTTP ${code})` : ''}: ${apiMessage(e)}`, {
    hint: 'kubectl cluster-info checks the kubeconfig reaches the cluster',
    cause: e,
  });
}

export async function resolveCapsule(kc: KubeConfig, name: string, namespace: string): Promise<ResolvedCapsule> {
  const k8s = clientNode();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  let obj: CapsuleObject;
  try {
    obj = (await api.getNamespacedCustomObject({ group: CAPSULE_GROUP, version: CAPSULE_VERSION, namespace, plural: 'capsules', name })) as CapsuleObject;
  } catch (e) {
    if (status(e) === 404) {
      throw new MurError('E-CLI-035', `no Capsule '${name}' in namespace '${namespace}'`, {
        hint: `kubectl get capsules -n ${namespace} lists them (-n picks the namespace)`,
      });
    }
    if (status(e) === 403 || status(e) === 401) {
      throw new MurError('E-CLI-037', `the cluster refused to let you read Capsule ${namespace}/${name} (HTTP ${status(e)})`, {
        hint: `your RBAC needs get on capsules.murmur.io in ${namespace}`,
      });
    }
    throw apiFailure(e, `reading Capsule ${namespace}/${name}`);
  }
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') {
    const why = ready ? `${ready.reason ?? ready.status}${ready.message ? `: ${ready.message}` : ''}` : 'no Ready condition yet';
    throw new MurError('E-CLI-036', `Capsule ${namespace}/${name} is not Ready (${why})`, {
      hint: `kubectl describe capsule ${name} -n ${namespace} says why`,
    });
  }
  const a2aUrl = obj.status?.a2aUrl;
  if (!a2aUrl)
    throw new MurError('E-CLI-036', `Capsule ${namespace}/${name} is Ready but has no status.a2aUrl`, {
      hint: 'the operator writes it; is the operator running?',
    });
  return { name, namespace, a2aUrl, audience: new URL(a2aUrl).href };
}

/** A TokenRequest for `serviceAccount` in the capsule's namespace, audience = the capsule's URL. */
export async function capsuleToken(kc: KubeConfig, c: ResolvedCapsule, serviceAccount: string, expirationSeconds = 600): Promise<string> {
  const k8s = clientNode();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    const r = await core.createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace: c.namespace,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [c.audience], expirationSeconds } },
    });
    const token = r.status?.token;
    if (!token) throw new Error('the TokenRequest came back without a token');
    return token;
  } catch (e) {
    if (status(e) === 403 || status(e) === 401) {
      throw new MurError('E-CLI-037', `the cluster refused a token of ServiceAccount ${c.namespace}/${serviceAccount} for ${c.audience} (HTTP ${status(e)})`, {
        hint: `your RBAC needs create on serviceaccounts/token in ${c.namespace}; or name a ServiceAccount you may use with --service-account, or use an API key`,
      });
    }
    if (status(e) === 404) {
      throw new MurError('E-CLI-037', `no ServiceAccount '${serviceAccount}' in namespace '${c.namespace}' to get a token of`, {
        hint: '--service-account names another one',
      });
    }
    throw apiFailure(e, `requesting a token of ServiceAccount ${c.namespace}/${serviceAccount}`);
  }
}
