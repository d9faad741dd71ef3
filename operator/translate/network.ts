/**
 * `capabilities.network.allow` entries, classified by what NetworkPolicy can express:
 *  - `capsule://<ns>/<name>` and `http(s)://<name>.<ns>.svc[.<domain>][:port]` naming a known
 *    Capsule → a pod-selector rule on the peer's A2A port (and an ingress rule on the peer);
 *  - IPs and CIDRs (optionally with a port or scheme) → an ipBlock rule;
 *  - other in-cluster Service names (`<svc>.<ns>.svc…`) → a rule to that namespace on the port
 *    (NetworkPolicy sees pod ports: this assumes the Service port equals its target port);
 *  - hostnames and wildcards (`*.googleapis.com`) → not expressible; the runtime enforces them,
 *    NetworkPolicy only opens their ports.
 */
import { isGrantProblem, parseGrant } from '../../runtime/contracts/network-grant.ts';

export type AllowEntry =
  | { kind: 'capsule'; raw: string; namespace: string; name: string; shorthand: boolean }
  | { kind: 'ip'; raw: string; cidr: string; port?: number }
  | { kind: 'service'; raw: string; namespace: string; name: string; ports: number[] }
  | { kind: 'host'; raw: string; host: string; ports: number[] }
  | { kind: 'invalid'; raw: string; reason: string };

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';

/** Is `host` the Service name of a capsule (`<name>.<ns>.svc[.<domain>]`)? */
export function serviceHost(host: string, clusterDomain: string): { name: string; namespace: string } | undefined {
  const m = new RegExp(`^(${LABEL})\\.(${LABEL})\\.svc(\\.${clusterDomain.replace(/\./g, '\\.')})?$`).exec(host);
  return m ? { name: m[1]!, namespace: m[3]! } : undefined;
}

/**
 * Classifies one entry with the one grammar (runtime/contracts/network-grant.ts), then by what
 * NetworkPolicy can express. `isCapsule(ns, name)` says whether a Capsule exists, so a Service URL
 * of a capsule is treated like the capsule:// shorthand. A wildcard (`*.googleapis.com`) is a
 * hostname grant: it never names an in-cluster Service.
 */
export function parseAllow(raw: string, clusterDomain: string, isCapsule: (ns: string, name: string) => boolean): AllowEntry {
  const g = parseGrant(raw);
  if (isGrantProblem(g)) return { kind: 'invalid', raw, reason: `${g.reason}; ${g.hint}` };
  switch (g.kind) {
    case 'capsule':
      return { kind: 'capsule', raw, namespace: g.namespace, name: g.name, shorthand: true };
    case 'cidr':
      return { kind: 'ip', raw, cidr: g.cidr, ...(g.port !== undefined ? { port: g.port } : {}) };
    case 'ip':
      return { kind: 'ip', raw, cidr: `${g.ip}/${g.family === 6 ? 128 : 32}`, ...(g.port !== undefined ? { port: g.port } : {}) };
    case 'wildcard':
      return { kind: 'host', raw, host: g.host, ports: g.port !== undefined ? [g.port] : [80, 443] };
    case 'host': {
      const ports = g.port !== undefined ? [g.port] : [80, 443];
      const svc = serviceHost(g.host, clusterDomain);
      if (svc && isCapsule(svc.namespace, svc.name)) return { kind: 'capsule', raw, namespace: svc.namespace, name: svc.name, shorthand: false };
      if (svc) return { kind: 'service', raw, namespace: svc.namespace, name: svc.name, ports };
      return { kind: 'host', raw, host: g.host, ports };
    }
  }
}

/** Every allow entry of a capsule spec with the field path it comes from (for messages). */
export function allowEntriesWithField(spec: Parameters<typeof allAllowEntries>[0]): Array<{ raw: string; field: string }> {
  const out: Array<{ raw: string; field: string }> = [];
  for (const [i, raw] of (spec.capabilities?.network?.allow ?? []).entries()) out.push({ raw, field: `spec.capabilities.network.allow[${i}]` });
  for (const [j, a] of (spec.artifacts ?? []).entries())
    for (const [i, raw] of (a.capabilities?.network?.allow ?? []).entries()) out.push({ raw, field: `spec.artifacts[${j}].capabilities.network.allow[${i}]` });
  for (const [j, h] of (spec.hooks ?? []).entries())
    for (const [i, raw] of (h.capabilities?.network?.allow ?? []).entries()) out.push({ raw, field: `spec.hooks[${j}].capabilities.network.allow[${i}]` });
  return out;
}

/** Every allow entry of a capsule spec: capsule-wide, per artifact and per hook grant. */
export function allAllowEntries(spec: {
  capabilities?: { network?: { allow?: string[] } };
  artifacts?: Array<{ capabilities?: { network?: { allow?: string[] } } }>;
  hooks?: Array<{ capabilities?: { network?: { allow?: string[] } } }>;
}): string[] {
  const out = new Set<string>(spec.capabilities?.network?.allow ?? []);
  for (const a of spec.artifacts ?? []) for (const e of a.capabilities?.network?.allow ?? []) out.add(e);
  for (const h of spec.hooks ?? []) for (const e of h.capabilities?.network?.allow ?? []) out.add(e);
  return [...out];
}

/** `<ns>/<name>` of the capsules a spec names as peers (for the operator's caller index). */
export function peerKeys(
  namespace: string,
  spec: Parameters<typeof allAllowEntries>[0],
  clusterDomain: string,
  isCapsule: (ns: string, name: string) => boolean,
): string[] {
  const keys = new Set<string>();
  for (const raw of allAllowEntries(spec)) {
    const e = parseAllow(raw, clusterDomain, isCapsule);
    if (e.kind === 'capsule') keys.add(`${e.namespace}/${e.name}`);
  }
  keys.delete(`${namespace}/`);
  return [...keys];
}
