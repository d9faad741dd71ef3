/**
 * The first fence of a sleeping Capsule: would its ingress NetworkPolicy admit this caller on the
 * A2A port? While the Capsule sleeps the caller reaches the activator, which the policy admits on
 * the Capsule's behalf (the operator adds that rule), so the activator evaluates the policy itself
 * with the Kubernetes NetworkPolicy ingress semantics, for one port:
 * - the rules are OR'ed; a rule admits when one of its ports matches and one of its peers does;
 *   a rule without `ports` matches every port, one without `from` (or an empty one) every source;
 * - a peer with `podSelector` alone means pods of the policy's own namespace; `namespaceSelector`
 *   alone every pod of the matching namespaces; both together the matching pods of the matching
 *   namespaces; `ipBlock` the addresses of `cidr` less its `except`s;
 * - selectors: `matchLabels` and `matchExpressions` (In, NotIn, Exists, DoesNotExist) ANDed, an
 *   empty selector matches everything, an unknown operator nothing (fail closed);
 * - a named port matches the container port of that name on the capsule pod (`a2a`).
 * A source that is no known pod matches ipBlocks only. A policy that selects nothing for Ingress
 * (no `Ingress` in policyTypes) is not this fence: callers ask `admitsSource` only with the
 * Capsule's rendered `<capsule>-ingress` policy, which always has it.
 * Pure: the caller's pod and its namespace's labels come through `lookup`.
 */
import { BlockList, isIP } from 'node:net';
import type { LabelSelector } from '../api/types.ts';

export interface PolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

export interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

export interface IngressRule {
  from?: PolicyPeer[];
  ports?: PolicyPort[];
}

/** The parts of a networking.k8s.io/v1 NetworkPolicy this fence reads. */
export interface NetworkPolicyView {
  metadata: { name: string; namespace?: string };
  spec?: { policyTypes?: string[]; ingress?: IngressRule[] };
}

/** The port the caller wants: its number on the pod and the container port's name. */
export interface TargetPort {
  number: number;
  name: string;
}

/** A caller: its address and, when it is a known pod, the pod's namespace and labels. */
export interface Source {
  ip: string;
  pod?: { namespace: string; labels: Record<string, string> };
}

export interface Lookup {
  /** The labels of a namespace (undefined when it is not known). */
  namespaceLabels(namespace: string): Record<string, string> | undefined;
}

export function matchesSelector(sel: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has || !values.includes(labels[e.key]!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[e.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** `::ffff:10.0.0.1` (an IPv4 caller on a dual-stack socket) → `10.0.0.1`. */
export function plainIp(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1]! : ip;
}

function inCidr(ip: string, cidr: string): boolean {
  const [addr, bits] = cidr.split('/');
  const family = isIP(addr ?? '');
  const ipFamily = isIP(ip);
  if (!family || family !== ipFamily) return false;
  const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  list.addSubnet(addr!, prefix, type);
  return list.check(ip, type);
}

export function ipBlockAdmits(block: { cidr: string; except?: string[] }, ip: string): boolean {
  const a = plainIp(ip);
  return inCidr(a, block.cidr) && !(block.except ?? []).some((x) => inCidr(a, x));
}

function peerAdmits(peer: PolicyPeer, policyNamespace: string, source: Source, lookup: Lookup): boolean {
  if (peer.ipBlock) return ipBlockAdmits(peer.ipBlock, source.ip);
  const pod = source.pod;
  if (!pod) return false;
  if (!peer.namespaceSelector && !peer.podSelector) return false; // an empty peer is invalid: admits nobody
  if (peer.namespaceSelector) {
    const nsLabels = lookup.namespaceLabels(pod.namespace);
    if (!nsLabels || !matchesSelector(peer.namespaceSelector, nsLabels)) return false;
  } else if (pod.namespace !== policyNamespace) {
    return false;
  }
  return matchesSelector(peer.podSelector, pod.labels);
}

function portMatches(p: PolicyPort, target: TargetPort): boolean {
  if ((p.protocol ?? 'TCP') !== 'TCP') return false;
  if (p.port === undefined) return true;
  if (typeof p.port === 'string') return p.port === target.name;
  if (p.endPort !== undefined) return target.number >= p.port && target.number <= p.endPort;
  return target.number === p.port;
}

/** Whether `policy` admits `source` on `port` (see the file comment for the semantics). */
export function admitsSource(policy: NetworkPolicyView, port: TargetPort, source: Source, lookup: Lookup): boolean {
  const ns = policy.metadata.namespace ?? 'default';
  for (const rule of policy.spec?.ingress ?? []) {
    if (rule.ports?.length && !rule.ports.some((p) => portMatches(p, port))) continue;
    if (!rule.from?.length) return true;
    if (rule.from.some((peer) => peerAdmits(peer, ns, source, lookup))) return true;
  }
  return false;
}
