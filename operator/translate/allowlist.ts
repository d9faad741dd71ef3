/**
 * The Capsule's network allowlist, translated: the egress entries its NetworkPolicy admits, the
 * rewrites of its murmur.yaml `network.allow` (a `capsule://` shorthand becomes its peer's A2A URL,
 * a CIDR stays NetworkPolicy-only), and the ServiceAccount tokens projected for its peers.
 */
import { isIP } from 'node:net';
import type { CapsuleSpec, Hook } from '../api/types.ts';
import type { PeerToken } from './builders/a2a-auth.ts';
import { allAllowEntries, allowEntriesWithField, parseAllow, type AllowEntry } from './network.ts';
import type { TranslateOptions } from './options.ts';
import type { Problem } from './problems.ts';

export interface AllowlistInput {
  spec: CapsuleSpec;
  hooks: Hook[];
  options: TranslateOptions;
  /** Service port of every known capsule, by `<ns>/<name>`. */
  capsulePorts: Record<string, number>;
  /** `<ns>/<name>` of capsules that take no ServiceAccount tokens. */
  noTokenPeers?: ReadonlySet<string>;
  /** The MCP servers' `url` entries (mcp.ts). */
  mcpEntries: AllowEntry[];
  /** The store server's address (store.ts), if any. */
  storeEgress?: string;
}

export interface AllowlistRendering {
  /** Every destination the egress policy admits, in the order the policy lists them. */
  entries: AllowEntry[];
  /** A token per peer host, by host. */
  peerTokens: PeerToken[];
  /** An allow entry as murmur.yaml writes it; undefined: left out of the file. */
  rewrite: (entry: string) => string | undefined;
}

export function a2aUrl(namespace: string, name: string, port: number, domain: string): string {
  return `http://${name}.${namespace}.svc.${domain}:${port}`;
}

/** The allowlist's entries, rewrites and peer tokens; its problems are pushed onto `problems`. */
export function renderAllowlist(input: AllowlistInput, problems: Problem[]): AllowlistRendering {
  const { spec, options } = input;
  const isCapsule = (pns: string, name: string) => `${pns}/${name}` in input.capsulePorts;
  const entries: AllowEntry[] = [];
  const peerTokens = new Map<string, PeerToken>();
  const rewrite = new Map<string, string | undefined>();
  const fieldOf = new Map<string, string>();
  for (const { raw, field } of allowEntriesWithField(spec)) if (!fieldOf.has(raw)) fieldOf.set(raw, field);
  for (const raw of allAllowEntries(spec)) {
    const e = parseAllow(raw, options.clusterDomain, isCapsule);
    if (e.kind === 'invalid') {
      const field = fieldOf.get(raw) ?? 'spec.capabilities.network.allow';
      problems.push({ reason: 'InvalidNetworkAllow', fatal: true, field, message: `${field}: network.allow entry '${raw}': ${e.reason}` });
      continue;
    }
    if (e.kind === 'capsule' && e.shorthand) {
      const port = input.capsulePorts[`${e.namespace}/${e.name}`];
      if (port === undefined)
        problems.push({
          reason: 'PeerNotFound',
          fatal: false,
          field: 'capabilities.network.allow',
          message: `peer Capsule '${e.namespace}/${e.name}' (${raw}) does not exist yet; its URL uses port 8080 until it does`,
        });
      rewrite.set(raw, a2aUrl(e.namespace, e.name, port ?? 8080, options.clusterDomain));
    }
    if (e.kind === 'capsule') {
      // The token file is named after the host the runtime will call (the rewritten URL's, or the
      // Service name as written); its audience is the peer's own --public-url.
      const host = e.shorthand ? `${e.name}.${e.namespace}.svc.${options.clusterDomain}` : hostOf(raw);
      const audience = `${a2aUrl(e.namespace, e.name, input.capsulePorts[`${e.namespace}/${e.name}`] ?? 8080, options.clusterDomain)}/`;
      if (host && !peerTokens.has(host) && !input.noTokenPeers?.has(`${e.namespace}/${e.name}`)) peerTokens.set(host, { host, audience });
    }
    // The runtime's allowlist takes hosts and IPs, not CIDRs (those stay NetworkPolicy-only), and
    // an IPv6 address only in brackets.
    if (e.kind === 'ip' && !raw.includes('://') && raw.includes('/')) rewrite.set(raw, undefined);
    else if (e.kind === 'ip' && isIP(raw.trim()) === 6) rewrite.set(raw, `[${raw.trim()}]`);
    entries.push(e);
  }
  entries.push(...input.mcpEntries);
  if (input.storeEgress) {
    const e = parseAllow(input.storeEgress, options.clusterDomain, isCapsule);
    if (e.kind === 'invalid')
      problems.push({
        reason: 'InvalidNetworkAllow',
        fatal: true,
        field: 'spec.store.postgres.address',
        message: `spec.store.postgres.address '${input.storeEgress}': ${e.reason}`,
      });
    else entries.push(e);
  }
  entries.push(...runtimeDestinations(input, new Set(entries.map((e) => e.raw)), isCapsule));
  return {
    entries,
    peerTokens: [...peerTokens.values()].sort((a, b) => (a.host < b.host ? -1 : 1)),
    rewrite: (e) => (rewrite.has(e) ? rewrite.get(e) : e),
  };
}

/**
 * Destinations the runtime process itself reaches (not the guests): artifact sources fetched at
 * staging, the inference endpoint, the OTLP collector. NetworkPolicy only; not in murmur.yaml.
 * Origins already among `seen` are not repeated.
 */
function runtimeDestinations(input: AllowlistInput, seen: Set<string>, isCapsule: (ns: string, name: string) => boolean): AllowEntry[] {
  const { spec, options } = input;
  const hostCalls = [
    ...(spec.artifacts ?? []).map((a) => a.source?.url),
    ...input.hooks.map((h) => h.spec.artifact.source?.url),
    spec.inference?.endpoint,
    spec.observability?.otel_endpoint ?? options.otlp?.endpoint,
  ];
  const out: AllowEntry[] = [];
  for (const url of hostCalls) {
    if (!url) continue;
    const origin = url.replace(/^(https?:\/\/[^/?#]+).*$/i, '$1');
    if (seen.has(origin)) continue;
    seen.add(origin);
    const e = parseAllow(origin, options.clusterDomain, isCapsule);
    if (e.kind !== 'invalid') out.push(e);
  }
  return out;
}

/** The lowercase host of an allow entry written as a URL or host[:port]. */
function hostOf(raw: string): string | undefined {
  try {
    return new URL(raw.includes('://') ? raw.trim() : `http://${raw.trim()}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}
