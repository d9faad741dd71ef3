/**
 * `capabilities.network.allow` matching — the one implementation behind every network grant: a
 * WASM component's outgoing HTTP, `murmur:message/send`, the A2A client and `delegate-task`.
 *
 * Entries: `host`, `host:port`, `scheme://host[:port]` (http/https), with an optional `*.` prefix on
 * the host matching subdomains. A bare host allows any port and both schemes; `host:port` pins the
 * port; `scheme://host` pins the scheme and means its default port unless one is given. Hosts
 * compare case-insensitively; IPv6 literals are written in brackets. Only http and https URLs are
 * ever allowed, and never one carrying credentials.
 */
export interface Destination {
  scheme: string;
  host: string;
  port: number;
}

interface AllowEntry {
  scheme?: string;
  host: string;
  /** Undefined = any port. */
  port?: number;
  wildcard: boolean;
}

const DEFAULT_PORT: Record<string, number> = { http: 80, https: 443 };

export function defaultPort(scheme: string): number {
  return DEFAULT_PORT[scheme] ?? 0;
}

function parseEntry(raw: string): AllowEntry | undefined {
  const e = raw.trim().toLowerCase();
  if (e === '') return undefined;
  if (e.includes('://')) {
    let u: URL;
    try {
      u = new URL(e);
    } catch {
      return undefined;
    }
    const scheme = u.protocol.slice(0, -1);
    let host = u.hostname.replace(/^\[|\]$/g, '');
    const wildcard = e.includes('://*.');
    if (wildcard) host = host.replace(/^\*\./, '');
    const port = u.port ? Number(u.port) : DEFAULT_PORT[scheme];
    return { scheme, host, ...(port !== undefined ? { port } : {}), wildcard };
  }
  if (e.includes('/')) return undefined;
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(e) ?? /^([^:]+)(?::(\d+))?$/.exec(e);
  if (!m) return undefined;
  let host = m[1]!;
  const wildcard = host.startsWith('*.');
  if (wildcard) host = host.slice(2);
  return { host, ...(m[2] !== undefined ? { port: Number(m[2]) } : {}), wildcard };
}

/** Scheme, host and port of a URL; undefined when it is not a URL. */
export function destinationOf(url: string): Destination | undefined {
  try {
    const u = new URL(url);
    const scheme = u.protocol.slice(0, -1);
    return { scheme, host: u.hostname.toLowerCase().replace(/^\[|\]$/g, ''), port: u.port ? Number(u.port) : defaultPort(scheme) };
  } catch {
    return undefined;
  }
}

/** Whether `dest` is allowed by `allow`. */
export function isAllowed(allow: readonly string[], dest: Destination): boolean {
  if (dest.scheme !== 'http' && dest.scheme !== 'https') return false;
  const host = dest.host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const raw of allow) {
    const e = parseEntry(raw);
    if (!e) continue;
    if (e.scheme !== undefined && e.scheme !== dest.scheme) continue;
    const hostOk = e.wildcard ? host.endsWith('.' + e.host) : host === e.host;
    if (!hostOk) continue;
    if (e.port !== undefined && e.port !== dest.port) continue;
    return true;
  }
  return false;
}

/** Whether `url` is allowed by `allow`. */
export function isUrlAllowed(url: string, allow: readonly string[]): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.username || u.password) return false;
  const d = destinationOf(url);
  return d !== undefined && isAllowed(allow, d);
}

/**
 * The exact refusal string for a URL outside the allowlist (`murmur:message/send`, push
 * notification URLs): one wording wherever a capsule's network grant refuses a peer.
 */
export function networkPolicyError(url: string): string {
  return `network policy: '${url}' not in capabilities.network.allow`;
}
