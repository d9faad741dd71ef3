/**
 * What the activator reads, each kind through one list-then-watch informer (operator/kube/), kept
 * as small as the fences need: Capsules, the operator's rendered NetworkPolicies and the
 * EndpointSlices of capsule Services in the watched namespaces; every Pod's IPs, labels and
 * namespace (a caller may be in any namespace) and every Namespace's labels, cluster-wide.
 * Nothing here writes.
 */
import type { Capsule, KubeObject } from '../api/types.ts';
import type { KubeClient } from '../kube/client.ts';
import { Informer, keyOf } from '../kube/informer.ts';
import type { EndpointSliceView } from './endpoints.ts';
import type { Lookup, NetworkPolicyView, Source } from './fences.ts';

/** The `managed-by` label value of the slices the EndpointSlice controller keeps for a Service's pods. */
export const SLICE_CONTROLLER = 'endpointslice-controller.k8s.io';
/** The `managed-by` label value of the operator's `<capsule>-activator` slice (a sleep-enabled Capsule's). */
export const SLICE_OPERATOR = 'capsule-operator.murmur.dev';
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_SLICE_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';

interface PodView extends KubeObject {
  ips: string[];
}

interface NamespaceView extends KubeObject {}

const CAPSULES = '/apis/murmur.io/v1alpha1';
const POLICIES = '/apis/networking.k8s.io/v1';
const SLICES = '/apis/discovery.k8s.io/v1';

function paths(prefix: string, plural: string, namespaces: string[]): string[] {
  return namespaces.length ? namespaces.map((ns) => `${prefix}/namespaces/${ns}/${plural}`) : [`${prefix}/${plural}`];
}

// biome-ignore lint/suspicious/noExplicitAny: a Pod as the API server sent it
function podView(p: any): PodView {
  // A host-network pod's address is its node's, shared by every such pod: not a pod identity.
  // A finished pod's address may already be another pod's.
  const live = !p.spec?.hostNetwork && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
  const ips: string[] = live ? (p.status?.podIPs ?? []).map((x: { ip: string }) => x.ip) : [];
  if (live && p.status?.podIP && !ips.includes(p.status.podIP)) ips.push(p.status.podIP);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.metadata.name, namespace: p.metadata.namespace, resourceVersion: p.metadata.resourceVersion, labels: p.metadata.labels ?? {} },
    ips,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: a Namespace as the API server sent it
function namespaceView(n: any): NamespaceView {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: n.metadata.name, resourceVersion: n.metadata.resourceVersion, labels: n.metadata.labels ?? {} },
  };
}

export class ActivatorCache implements Lookup {
  readonly capsules: Informer<Capsule>;
  readonly policies: Informer<KubeObject>;
  readonly slices: Informer<KubeObject>;
  private readonly pods: Informer<PodView>;
  private readonly namespaces: Informer<NamespaceView>;
  /** Pod IP → pod keys (a reused address can briefly belong to two pods: then it is no pod we can name). */
  private readonly byIp = new Map<string, Set<string>>();

  constructor(client: KubeClient, watched: string[], log: (m: string) => void) {
    this.capsules = new Informer<Capsule>(client, 'capsules', paths(CAPSULES, 'capsules', watched), { log });
    this.policies = new Informer<KubeObject>(client, 'networkpolicies', paths(POLICIES, 'networkpolicies', watched), {
      labelSelector: 'app.kubernetes.io/managed-by=capsule-operator',
      log,
    });
    this.slices = new Informer<KubeObject>(client, 'endpointslices', paths(SLICES, 'endpointslices', watched), {
      labelSelector: `${LABEL_SLICE_MANAGED_BY} in (${SLICE_CONTROLLER},${SLICE_OPERATOR})`,
      indexBy: (s) => serviceKey(s),
      log,
    });
    this.pods = new Informer<PodView>(client, 'pods', ['/api/v1/pods'], { transform: podView, log });
    this.namespaces = new Informer<NamespaceView>(client, 'namespaces', ['/api/v1/namespaces'], { transform: namespaceView, log });
    this.pods.on((type, pod, old) => {
      if (old) for (const ip of old.ips) this.unindex(ip, keyOf(old));
      if (type !== 'DELETED') for (const ip of pod.ips) this.index(ip, keyOf(pod));
    });
  }

  private index(ip: string, key: string): void {
    let set = this.byIp.get(ip);
    if (!set) this.byIp.set(ip, (set = new Set()));
    set.add(key);
  }

  private unindex(ip: string, key: string): void {
    const set = this.byIp.get(ip);
    set?.delete(key);
    if (set && !set.size) this.byIp.delete(ip);
  }

  private all(): Informer<KubeObject>[] {
    return [this.capsules, this.policies, this.slices, this.pods, this.namespaces] as Informer<KubeObject>[];
  }

  start(): void {
    for (const i of this.all()) i.start();
  }

  get synced(): boolean {
    return this.all().every((i) => i.synced);
  }

  async waitForSync(timeoutMs?: number): Promise<void> {
    await Promise.all(this.all().map((i) => i.waitForSync(timeoutMs)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.all().map((i) => i.stop()));
  }

  capsule(namespace: string, name: string): Capsule | undefined {
    return this.capsules.get(`${namespace}/${name}`);
  }

  policy(namespace: string, name: string): NetworkPolicyView | undefined {
    return this.policies.get(`${namespace}/${name}`) as NetworkPolicyView | undefined;
  }

  /** Every EndpointSlice of a Service (both managers). */
  slicesOf(namespace: string, service: string): EndpointSliceView[] {
    return this.slices.indexed(`${namespace}/${service}`) as EndpointSliceView[];
  }

  /** The caller as the fences see it: a known pod's namespace and labels, else its address only. */
  source(ip: string): Source {
    const keys = [...(this.byIp.get(ip) ?? [])];
    if (keys.length !== 1) return { ip };
    const pod = this.pods.get(keys[0]!);
    if (!pod) return { ip };
    return { ip, pod: { namespace: pod.metadata.namespace ?? '', labels: pod.metadata.labels ?? {} } };
  }

  namespaceLabels(namespace: string): Record<string, string> | undefined {
    return this.namespaces.get(namespace)?.metadata.labels;
  }
}

/** `<ns>/<service>` of an EndpointSlice (its `kubernetes.io/service-name` label). */
export function serviceKey(s: KubeObject): string | undefined {
  const svc = s.metadata.labels?.[LABEL_SERVICE_NAME];
  return svc ? `${s.metadata.namespace}/${svc}` : undefined;
}
