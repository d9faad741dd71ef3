/**
 * This capsule's credentials for its peers. In a pod the operator projects one ServiceAccount
 * token per declared peer into `$MURMUR_A2A_PEER_TOKENS_DIR` (default
 * /var/run/secrets/murmur/peers), each with that peer's URL as its audience, in a file named
 * after the peer's host. The kubelet rotates them, so a token is read at each call, never cached.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { holdSecret } from '../../secrets.ts';

export const DEFAULT_PEER_TOKENS_DIR = '/var/run/secrets/murmur/peers';

/** A lookup of the bearer token for a peer URL (undefined when none is mounted for its host). */
export function peerTokens(dir = process.env.MURMUR_A2A_PEER_TOKENS_DIR ?? DEFAULT_PEER_TOKENS_DIR): (peerUrl: string) => string | undefined {
  // Each host's current token is held for redaction (secrets.ts); a rotated one is let go.
  const released = new Map<string, () => void>();
  const hold = (host: string, token: string): void => {
    released.get(host)?.();
    released.set(host, holdSecret(token));
  };
  return (peerUrl) => {
    let host: string;
    try {
      host = new URL(peerUrl).hostname.toLowerCase();
    } catch {
      return undefined;
    }
    if (!/^[a-z0-9.-]+$/.test(host)) return undefined; // a file name, never a path
    try {
      const t = readFileSync(join(dir, host), 'utf8').trim();
      if (t === '') return undefined;
      hold(host, t);
      return t;
    } catch {
      return undefined;
    }
  };
}
