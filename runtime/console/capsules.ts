/**
 * The Capsules a console viewer can see, read with the viewer's own kubeconfig identity: the
 * API server's RBAC decides, never the console. A cluster-wide list is tried first; when it is
 * forbidden, each namespace the viewer may list (or, when listing namespaces is forbidden too, the
 * kubeconfig context's namespace) is read on its own, and a namespace that refuses is reported as
 * refused, with nothing of it shown.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CAPSULE_GROUP, CAPSULE_VERSION } from '../client/capsule-target.ts';
import { apiMessage, clientNode, contextNamespace } from '../client/kubeconfig.ts';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

interface CapsuleObject {
  metadata?: { name?: string; namespace?: string; creationTimestamp?: string | Date };
  spec?: { replicas?: number; inference?: { model?: string; max_session_tokens?: number } };
  status?: {
    conditions?: Condition[];
    replicas?: number;
    readyReplicas?: number;
    a2aUrl?: string;
    usage?: { inputTokens?: number; outputTokens?: number; totalTokens?: number; observedAt?: string; pods?: number };
  };
}

/** What the page shows of one Capsule. */
export interface CapsuleView {
  name: string;
  namespace: string;
  ready: 'True' | 'False' | 'Unknown';
  readyReason?: string;
  replicas: { desired?: number; current?: number; ready: number };
  model?: string;
  a2aUrl?: string;
  /** Tokens spent (status.usage, scraped from the pods' /metrics by the operator). */
  tokens?: { input: number; output: number; total: number; observedAt?: string };
  /** The spend ceiling: tokens one session may spend (spec.inference.max_session_tokens). */
  sessionCeiling?: number;
  conditions: Condition[];
}

export interface CapsuleList {
  capsules: CapsuleView[];
  /** How the list was read: one cluster-wide list, or namespace by namespace. */
  scope: 'cluster' | 'namespaces';
  /** Namespaces whose Capsules the viewer may not list (nothing of them is shown). */
  refused: string[];
}

export interface EventView {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastSeen?: string;
}

function httpStatus(e: unknown): number | undefined {
  const c = (e as { code?: unknown }).code;
  return typeof c === 'number' ? c : undefined;
}

const forbidden = (e: unknown): boolean => httpStatus(e) === 403 || httpStatus(e) === 401;

/** An API failure that is not a refusal: the page shows it as the API server's own words. */
export class ApiFailure extends Error {}

export function capsuleView(o: CapsuleObject): CapsuleView {
  const conditions = o.status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready');
  const u = o.status?.usage;
  return {
    name: o.metadata?.name ?? '?',
    namespace: o.metadata?.namespace ?? '?',
    ready: ready?.status === 'True' ? 'True' : ready?.status === 'False' ? 'False' : 'Unknown',
    ...(ready?.reason ? { readyReason: ready.reason } : {}),
    replicas: {
      ...(o.spec?.replicas !== undefined ? { desired: o.spec.replicas } : {}),
      ...(o.status?.replicas !== undefined ? { current: o.status.replicas } : {}),
      ready: o.status?.readyReplicas ?? 0,
    },
    ...(o.spec?.inference?.model ? { model: o.spec.inference.model } : {}),
    ...(o.status?.a2aUrl ? { a2aUrl: o.status.a2aUrl } : {}),
    ...(u
      ? { tokens: { input: u.inputTokens ?? 0, output: u.outputTokens ?? 0, total: u.totalTokens ?? 0, ...(u.observedAt ? { observedAt: u.observedAt } : {}) } }
      : {}),
    ...(o.spec?.inference?.max_session_tokens !== undefined ? { sessionCeiling: o.spec.inference.max_session_tokens } : {}),
    conditions,
  };
}

const NAMESPACES_AT_ONCE = 8;

const byName = (a: CapsuleView, b: CapsuleView) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name);

export async function listCapsules(kc: KubeConfig): Promise<CapsuleList> {
  const k8s = clientNode();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    const all = (await api.listClusterCustomObject({ group: CAPSULE_GROUP, version: CAPSULE_VERSION, plural: 'capsules' })) as { items?: CapsuleObject[] };
    return { capsules: (all.items ?? []).map(capsuleView).sort(byName), scope: 'cluster', refused: [] };
  } catch (e) {
    if (!forbidden(e)) throw new ApiFailure(`listing Capsules: ${apiMessage(e)}`);
  }
  const capsules: CapsuleView[] = [];
  const refused: string[] = [];
  const one = async (namespace: string): Promise<void> => {
    try {
      const r = (await api.listNamespacedCustomObject({ group: CAPSULE_GROUP, version: CAPSULE_VERSION, namespace, plural: 'capsules' })) as {
        items?: CapsuleObject[];
      };
      capsules.push(...(r.items ?? []).map(capsuleView));
    } catch (e) {
      if (!forbidden(e)) throw new ApiFailure(`listing Capsules in ${namespace}: ${apiMessage(e)}`);
      refused.push(namespace);
    }
  };
  // A few namespaces at a time: a cluster of hundreds must not open hundreds of requests at once.
  const namespaces = await visibleNamespaces(kc);
  for (let i = 0; i < namespaces.length; i += NAMESPACES_AT_ONCE) await Promise.all(namespaces.slice(i, i + NAMESPACES_AT_ONCE).map(one));
  return { capsules: capsules.sort(byName), scope: 'namespaces', refused: refused.sort() };
}

/** The namespaces to read one by one: those the viewer may list, else the context's own. */
async function visibleNamespaces(kc: KubeConfig): Promise<string[]> {
  const core = kc.makeApiClient(clientNode().CoreV1Api);
  try {
    const r = await core.listNamespace();
    return r.items
      .map((n) => n.metadata?.name ?? '')
      .filter((n) => n !== '')
      .sort();
  } catch (e) {
    if (!forbidden(e)) throw new ApiFailure(`listing namespaces: ${apiMessage(e)}`);
    return [contextNamespace(kc)];
  }
}

/**
 * The recent events of one Capsule, newest first; `undefined` when the viewer may not list events
 * in its namespace (the page says so rather than showing an empty list as if there were none).
 */
export async function capsuleEvents(kc: KubeConfig, namespace: string, name: string, limit = 20): Promise<EventView[] | undefined> {
  const core = kc.makeApiClient(clientNode().CoreV1Api);
  try {
    const r = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.kind=Capsule,involvedObject.name=${name}` });
    const when = (e: (typeof r.items)[number]) => new Date(e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? 0).getTime();
    return r.items
      .sort((a, b) => when(b) - when(a))
      .slice(0, limit)
      .map((e) => ({
        ...(e.type ? { type: e.type } : {}),
        ...(e.reason ? { reason: e.reason } : {}),
        ...(e.message ? { message: e.message } : {}),
        ...(e.count !== undefined ? { count: e.count } : {}),
        lastSeen: new Date(when(e)).toISOString(),
      }));
  } catch (e) {
    if (forbidden(e)) return undefined;
    throw new ApiFailure(`listing events of Capsule ${namespace}/${name}: ${apiMessage(e)}`);
  }
}

/** One Capsule read with the viewer's identity (403 → undefined: the viewer may not see it). */
export async function readCapsule(kc: KubeConfig, namespace: string, name: string): Promise<CapsuleView | undefined> {
  const api = kc.makeApiClient(clientNode().CustomObjectsApi);
  try {
    return capsuleView(
      (await api.getNamespacedCustomObject({ group: CAPSULE_GROUP, version: CAPSULE_VERSION, namespace, plural: 'capsules', name })) as CapsuleObject,
    );
  } catch (e) {
    if (forbidden(e) || httpStatus(e) === 404) return undefined;
    throw new ApiFailure(`reading Capsule ${namespace}/${name}: ${apiMessage(e)}`);
  }
}
