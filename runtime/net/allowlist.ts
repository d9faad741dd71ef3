/**
 * `capabilities.network.allow` enforcement in the runtime — every network grant goes through here:
 * a WASM component's outgoing HTTP (host/wasi.ts), `murmur:message/send`, the A2A client,
 * `delegate-task` and push notification URLs. The grammar and the matching rule themselves are
 * runtime/contracts/network-grant.ts (shared with the manifest validator and the operator); this
 * file turns a URL or a WASI request's authority into the destination that is matched.
 *
 * Only http and https URLs are ever allowed, and never one carrying credentials.
 */
import { DEFAULT_PORT, allowsDestination, type Destination } from '../contracts/network-grant.ts';

export type { Destination } from '../contracts/network-grant.ts';

export function defaultPort(scheme: string): number {
  return DEFAULT_PORT[scheme as keyof typeof DEFAULT_PORT] ?? 0;
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
  return allowsDestination(allow, dest);
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
  return d !== undefined && allowsDestination(allow, d);
}

/**
 * The exact refusal string for a URL outside the allowlist (`murmur:message/send`, push
 * notification URLs): one wording wherever a capsule's network grant refuses a peer.
 */
export function networkPolicyError(url: string): string {
  return `network policy: '${url}' not in capabilities.network.allow`;
}
