/**
 * `capabilities.network.allow` entries, classified by what NetworkPolicy can express:
 *  - `capsule://<ns>/<name>` and `http(s)://<name>.<ns>.svc[.<domain>][:port]` naming a known
 *    Capsule → a pod-selector rule on the peer's A2A port (and an ingress rule on the peer);
 *  - IPs and CIDRs (optionally with a port or scheme) → an ipBlock rule;
 *  - other in-cluster Service names (`<svc>.<ns>.svc…`) → a rule to that namespace on the port
 *    (NetworkPolicy sees pod ports: this assumes the Service port equals its target port);
 *  - hostnames → not expressible; the runtime enforces them, NetworkPolicy only opens their ports.
 */
import { isIP } from 'node:net';
import { isProblem, parseNetworkEntry } from '../../runtime/manifest/checks.ts';

export type AllowEntry =
  | { kind: 'capsule'; raw: string; namespace: string; name: string; shorthand: boolean }
  | { kind: 'ip'; raw: string; cidr: string; port?: number }
  | { kind: 'service'; raw: string; namespace: string; name: string; ports: number[] }
  | { kind: 'host'; raw: string; host: string; ports: number[] }
  | { kind: 'invalid'; raw: string; reason: string };

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const CAPSULE_RE = new RegExp(`^capsule://(${LABEL})/(${LABEL})$`);
const SCHEME_PORT: Record<string, number> = { http: 80, https: 443 };

function cidrOf(ip: string): string {
  return isIP(ip) === 6 ? `${ip}/128` : `${ip}/32`;
}

function validCidr(s: string): boolean {
  const m = /^(.+)\/(\d{1,3})$/.exec(s);
  if (!m) return false;
  const v = isIP(m[1]!);
  const bits = Number(m[2]);
  return (v === 4 && bits <= 32) || (v === 6 && bits <= 128);
}

function parsePort(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/** Is `host` the Service name of a capsule (`<name>.<ns>.svc[.<domain>]`)? */
export function serviceHost(host: string, clusterDomain: string): { name: string; namespace: string } | undefined {
  const m = new RegExp(`^(${LABEL})\\.(${LABEL})\\.svc(\\.${clusterDomain.replace(/\./g, '\\.')})?$`).exec(host);
  return m ? { name: m[1]!, namespace: m[3]! } : undefined;
}

/**
 * Classifies one entry. `isCapsule(ns, name)` says whether a Capsule exists, so a Service URL of
 * a capsule is treated like the capsule:// shorthand.
 */
export function parseAllow(raw: string, clusterDomain: string, isCapsule: (ns: string, name: string) => boolean): AllowEntry {
  const s = raw.trim();
  const cap = CAPSULE_RE.exec(s);
  if (cap) return { kind: 'capsule', raw, namespace: cap[1]!, name: cap[3]!, shorthand: true };
  if (s.startsWith('capsule://')) return { kind: 'invalid', raw, reason: 'a capsule peer is written capsule://<namespace>/<name>' };

  let scheme: string | undefined;
  let rest = s;
  const sm = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(s);
  if (sm) {
    scheme = sm[1]!.toLowerCase();
    rest = sm[2]!;
    // One trailing slash after a scheme is the origin itself (the runtime accepts it too).
    if (rest.endsWith('/') && !rest.slice(0, -1).includes('/')) rest = rest.slice(0, -1);
    if (!(scheme in SCHEME_PORT)) return { kind: 'invalid', raw, reason: `scheme '${scheme}' is not allowed (http or https only)` };
    if (/[/?#]/.test(rest)) return { kind: 'invalid', raw, reason: 'an allow entry names a destination, not a path, query or fragment' };
  }
  // CIDR, optionally :port (IPv4 only; IPv6 CIDRs take no port).
  if (!scheme && rest.includes('/')) {
    const m = /^([0-9.]+\/\d{1,3}):(\d+)$/.exec(rest);
    if (m && validCidr(m[1]!)) {
      const port = parsePort(m[2]!);
      if (port === undefined) return { kind: 'invalid', raw, reason: 'port must be 1-65535' };
      return { kind: 'ip', raw, cidr: m[1]!, port };
    }
    if (validCidr(rest)) return { kind: 'ip', raw, cidr: rest };
    return { kind: 'invalid', raw, reason: 'not a host, host:port, URL, IP or CIDR' };
  }
  // Everything that is not a CIDR reaches the runtime's allowlist: the runtime's own parser says
  // whether it is valid (so `*`, `user:pw@host` or a path get the runtime's message, not ours).
  const rt = parseNetworkEntry(scheme ? `${scheme}://${rest}` : rest.startsWith('[') || isIP(rest) !== 6 ? rest : `[${rest}]`);
  if (isProblem(rt)) return { kind: 'invalid', raw, reason: `${rt.message.replace(/^invalid network.allow entry '[^']*': /, '')}; ${rt.hint}` };
  let host = rest;
  let port: number | undefined;
  const v6 = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(rest);
  if (v6) {
    host = v6[1]!;
    if (v6[2] !== undefined) port = parsePort(v6[2]);
    if (v6[2] !== undefined && port === undefined) return { kind: 'invalid', raw, reason: 'port must be 1-65535' };
  } else if (isIP(rest) === 6) {
    host = rest;
  } else {
    const hp = /^([^:]+)(?::([^:]*))?$/.exec(rest);
    if (!hp) return { kind: 'invalid', raw, reason: 'not a host, host:port, URL, IP or CIDR' };
    host = hp[1]!;
    if (hp[2] !== undefined) {
      port = parsePort(hp[2]);
      if (port === undefined) return { kind: 'invalid', raw, reason: 'port must be 1-65535' };
    }
  }
  if (port === undefined && scheme) port = SCHEME_PORT[scheme];
  if (isIP(host)) return { kind: 'ip', raw, cidr: cidrOf(host), ...(port !== undefined ? { port } : {}) };
  host = host.toLowerCase();
  if (!/^[a-z0-9*]([-a-z0-9.*]*[a-z0-9])?$/.test(host)) return { kind: 'invalid', raw, reason: `'${host}' is not a valid hostname` };
  const svc = serviceHost(host, clusterDomain);
  if (svc && isCapsule(svc.namespace, svc.name)) return { kind: 'capsule', raw, namespace: svc.namespace, name: svc.name, shorthand: false };
  if (svc) return { kind: 'service', raw, namespace: svc.namespace, name: svc.name, ports: port !== undefined ? [port] : [80, 443] };
  return { kind: 'host', raw, host, ports: port !== undefined ? [port] : [80, 443] };
}

/** Every allow entry of a capsule spec with the field path it comes from (for messages). */
export function allowEntriesWithField(spec: Parameters<typeof allAllowEntries>[0]): Array<{ raw: string; field: string }> {
  const out: Array<{ raw: string; field: string }> = [];
  (spec.capabilities?.network?.allow ?? []).forEach((raw, i) => out.push({ raw, field: `spec.capabilities.network.allow[${i}]` }));
  (spec.artifacts ?? []).forEach((a, j) => (a.capabilities?.network?.allow ?? []).forEach((raw, i) => out.push({ raw, field: `spec.artifacts[${j}].capabilities.network.allow[${i}]` })));
  (spec.hooks ?? []).forEach((h, j) => (h.capabilities?.network?.allow ?? []).forEach((raw, i) => out.push({ raw, field: `spec.hooks[${j}].capabilities.network.allow[${i}]` })));
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
export function peerKeys(namespace: string, spec: Parameters<typeof allAllowEntries>[0], clusterDomain: string, isCapsule: (ns: string, name: string) => boolean): string[] {
  const keys = new Set<string>();
  for (const raw of allAllowEntries(spec)) {
    const e = parseAllow(raw, clusterDomain, isCapsule);
    if (e.kind === 'capsule') keys.add(`${e.namespace}/${e.name}`);
  }
  keys.delete(`${namespace}/`);
  return [...keys];
}
