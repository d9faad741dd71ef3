/**
 * `capabilities.network.allow` matching, shared by the WASM HTTP grant, message/send and the
 * delegate-task tool. Entries: `host`, `host:port`, `scheme://host[:port]` (http/https). A bare host
 * allows any port and both schemes; a port pins it; a scheme pins that too. Hosts compare
 * case-insensitively; IPv6 literals are written in brackets.
 */
export interface Destination {
  scheme: 'http' | 'https' | string;
  host: string;
  port: number;
}

interface Rule {
  scheme?: string;
  host: string;
  port?: number;
}

function parseRule(entry: string): Rule | undefined {
  const m = /^(?:(https?):\/\/)?(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/i.exec(entry.trim());
  if (!m) return undefined;
  return { scheme: m[1]?.toLowerCase(), host: m[2]!.toLowerCase(), port: m[3] ? Number(m[3]) : undefined };
}

export function defaultPort(scheme: string): number {
  return scheme === 'https' ? 443 : 80;
}

export function destinationOf(url: string): Destination | undefined {
  try {
    const u = new URL(url);
    const scheme = u.protocol.replace(/:$/, '');
    return { scheme, host: u.hostname.toLowerCase(), port: u.port ? Number(u.port) : defaultPort(scheme) };
  } catch {
    return undefined;
  }
}

export function isAllowed(allow: readonly string[], dest: Destination): boolean {
  for (const entry of allow) {
    const r = parseRule(entry);
    if (!r) continue;
    if (r.host !== dest.host.toLowerCase()) continue;
    if (r.scheme && r.scheme !== dest.scheme) continue;
    if (r.port !== undefined) {
      if (r.port !== dest.port) continue;
    } else if (r.scheme && dest.port !== defaultPort(r.scheme)) {
      continue;
    }
    return true;
  }
  return false;
}

export function isUrlAllowed(allow: readonly string[], url: string): boolean {
  const d = destinationOf(url);
  return d !== undefined && (d.scheme === 'http' || d.scheme === 'https') && isAllowed(allow, d);
}
