/**
 * NetworkPolicies of a capsule: `<name>-egress` (default deny + DNS + one rule per expressible
 * allow entry) and `<name>-ingress` (A2A only from callers that name this capsule or that the spec
 * admits; metrics separately, from metricsFrom plus the operator's usage scraper, or from anyone).
 * Hostnames cannot be expressed: the runtime enforces them, and the egress policy opens only their
 * ports (listed in an annotation).
 */
import type { Capsule, IngressPeer, KubeObject, LabelSelector } from '../../api/types.ts';
import type { AllowEntry } from '../network.ts';
import type { NetworkPeer, TranslateOptions } from '../options.ts';
import { A2A_PORT, LABEL_CAPSULE, METRICS_PORT, meta, names, selectorLabels } from './common.ts';

export const ANNOTATION_RUNTIME_HOSTS = 'murmur.io/hostnames-enforced-by-runtime';

const NS_LABEL = 'kubernetes.io/metadata.name';
const tcp = (port: number) => ({ protocol: 'TCP', port });

function capsulePeer(namespace: string, name: string): NetworkPeer {
  return { namespaceSelector: { matchLabels: { [NS_LABEL]: namespace } }, podSelector: { matchLabels: { [LABEL_CAPSULE]: name } } };
}

/** `extra`: rules the runtime itself needs besides the allowlist (the API server for TokenReview). */
export function buildEgressPolicy(c: Capsule, entries: AllowEntry[], opts: TranslateOptions, extra: Record<string, unknown>[] = []): KubeObject {
  const rules: Record<string, unknown>[] = [{ to: [opts.dns], ports: [{ protocol: 'UDP', port: 53 }, tcp(53)] }, ...extra];
  const hostPorts = new Set<number>();
  const hosts: string[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    let rule: Record<string, unknown> | undefined;
    if (e.kind === 'capsule') {
      rule = { to: [capsulePeer(e.namespace, e.name)], ports: [tcp(A2A_PORT)] };
      // A peer may be asleep: its Service then sends the call to the activator's pods, which hold
      // it while the peer wakes. Added for any peer (this capsule's translate does not see the
      // peer's spec): the activator answers only for sleep-enabled Capsules and applies each one's
      // own ingress policy to the caller, so the wider rule admits no call the peer would refuse.
      if (opts.activator) {
        const a = opts.activator;
        const toActivator = {
          to: [{ namespaceSelector: { matchLabels: { [NS_LABEL]: a.namespace } }, podSelector: { matchLabels: a.podLabels } }],
          ports: [tcp(a.port)],
        };
        const k = JSON.stringify(toActivator);
        if (!seen.has(k)) rules.push(toActivator);
        seen.add(k);
      }
    } else if (e.kind === 'service') rule = { to: [{ namespaceSelector: { matchLabels: { [NS_LABEL]: e.namespace } } }], ports: e.ports.map(tcp) };
    else if (e.kind === 'ip') rule = { to: [{ ipBlock: { cidr: e.cidr } }], ...(e.port !== undefined ? { ports: [tcp(e.port)] } : {}) };
    else if (e.kind === 'host') {
      for (const p of e.ports) hostPorts.add(p);
      hosts.push(e.raw);
    }
    if (rule) {
      const k = JSON.stringify(rule);
      if (!seen.has(k)) rules.push(rule);
      seen.add(k);
    }
  }
  if (hostPorts.size) {
    // NetworkPolicy cannot name a host: the rule opens the ports to "anywhere but the cluster and
    // private ranges" (an except must lie inside its cidr, hence one block per address family);
    // the runtime enforces the names themselves.
    const v6 = opts.egressExcept.filter((x) => x.includes(':'));
    const v4 = opts.egressExcept.filter((x) => !x.includes(':'));
    rules.push({
      to: [{ ipBlock: { cidr: '0.0.0.0/0', ...(v4.length ? { except: v4 } : {}) } }, { ipBlock: { cidr: '::/0', ...(v6.length ? { except: v6 } : {}) } }],
      ports: [...hostPorts].sort((a, b) => a - b).map(tcp),
    });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(c, names(c).egress, hosts.length ? { annotations: { [ANNOTATION_RUNTIME_HOSTS]: hosts.join(',') } } : {}),
    spec: { podSelector: { matchLabels: selectorLabels(c) }, policyTypes: ['Egress'], egress: rules },
  };
}

function selector(s: LabelSelector): LabelSelector {
  return { ...(s.matchLabels ? { matchLabels: s.matchLabels } : {}), ...(s.matchExpressions ? { matchExpressions: s.matchExpressions } : {}) };
}

function admittedPeer(p: IngressPeer): NetworkPeer {
  const out: Record<string, unknown> = {};
  if (p.namespace) out.namespaceSelector = { matchLabels: { [NS_LABEL]: p.namespace } };
  if (p.namespaceSelector) out.namespaceSelector = selector(p.namespaceSelector);
  if (p.podSelector) out.podSelector = selector(p.podSelector);
  return out as NetworkPeer;
}

/**
 * `callers`: `<ns>/<name>` of capsules whose allowlist names this capsule. `sleeps`: the capsule may
 * sleep, so the activator's pods (opts.activator) may reach the a2a port to forward the requests
 * they held while it woke (the activator applies this policy's other peers to its callers itself).
 */
export function buildIngressPolicy(c: Capsule, callers: string[], opts: TranslateOptions, sleeps = false): KubeObject {
  const from = [
    ...[...new Set(callers)].sort().map((k) => {
      const [ns, name] = k.split('/') as [string, string];
      return capsulePeer(ns, name);
    }),
    ...(c.spec.ingress?.from ?? []).map(admittedPeer),
    ...(sleeps && opts.activator
      ? [{ namespaceSelector: { matchLabels: { [NS_LABEL]: opts.activator.namespace } }, podSelector: { matchLabels: opts.activator.podLabels } }]
      : []),
    // The operator's own pods read the agent card there right before the capsule sleeps (the
    // activator serves it while asleep): controller/sleep.ts.
    ...(sleeps && opts.activator && opts.usageScraper ? [opts.usageScraper] : []),
  ];
  const rules: Record<string, unknown>[] = [];
  // An empty `from` would admit everyone: a capsule nobody names gets no A2A rule at all.
  if (from.length) rules.push({ from, ports: [tcp(A2A_PORT)] });
  // Metrics: from metricsFrom (Prometheus) and the operator's usage scraper; no list = any source.
  const metricsFrom = opts.metricsFrom ? [...opts.metricsFrom, ...(opts.usageScraper ? [opts.usageScraper] : [])] : undefined;
  rules.push({ ...(metricsFrom ? { from: metricsFrom } : {}), ports: [tcp(METRICS_PORT)] });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(c, names(c).ingress),
    spec: { podSelector: { matchLabels: selectorLabels(c) }, policyTypes: ['Ingress'], ingress: rules },
  };
}
