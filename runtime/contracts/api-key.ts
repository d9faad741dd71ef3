/**
 * An A2A API key as a Kubernetes Secret holds it (one entry per holder: the entry's name is the
 * holder, its value the key), read ONE way by both sides that read it:
 * - the runtime, from the Secret mounted as a folder (runtime/a2a/server/auth-config.ts);
 * - the operator, which publishes a keyed digest of each key in the status of a Capsule that may
 *   sleep, so the activator can check a bearer API key before waking it without reading the
 *   Secret (operator/controller/controller.ts, operator/activator/auth.ts).
 * A different reading on one side (a trim, a skipped entry) would let a key wake a capsule that
 * then refuses it, or refuse at the activator a key the capsule takes.
 *
 * The digest is HMAC-SHA256 keyed with the activator key, a random secret only the operator and
 * the activator hold (the chart's `<release>-activator-key` Secret): published digests cannot be
 * tested against guessed keys by anyone without it, unlike a plain hash.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The shortest key the runtime takes (a shorter one stops `mur serve` with E-A2A-021). */
export const MIN_API_KEY_LENGTH = 16;

/** Whether a Secret entry is a key: kubelet's `..data` bookkeeping files in the mounted folder (and any other dot-name) are not. */
export const isApiKeyEntry = (name: string): boolean => !name.startsWith('.');

/** The key an entry holds: its bytes as UTF-8, surrounding whitespace (an `echo`'s newline) trimmed. */
export const apiKeyOf = (value: Uint8Array | string): string => (typeof value === 'string' ? value : Buffer.from(value).toString('utf8')).trim();

/** HMAC-SHA256(activatorKey, apiKey), lowercase hex. */
export function apiKeyDigest(activatorKey: Uint8Array, apiKey: string): string {
  return createHmac('sha256', activatorKey).update(apiKey, 'utf8').digest('hex');
}

/**
 * The digests of the keys in a Secret's `data` (base64 values, as the API server sends them):
 * sorted, without repeats. Entries the runtime would not take as a key (a dot-name, or shorter
 * than MIN_API_KEY_LENGTH) are left out: such a key never wakes a capsule.
 */
export function secretApiKeyDigests(activatorKey: Uint8Array, data: Record<string, string> | undefined): string[] {
  const out = new Set<string>();
  for (const [name, b64] of Object.entries(data ?? {})) {
    if (!isApiKeyEntry(name) || typeof b64 !== 'string') continue;
    const key = apiKeyOf(Buffer.from(b64, 'base64'));
    if (key.length >= MIN_API_KEY_LENGTH) out.add(apiKeyDigest(activatorKey, key));
  }
  return [...out].sort();
}

/**
 * Whether `token` is a key whose digest is among `digests`. Compared in constant time against
 * every digest (no early exit), so the time taken says nothing of which one, or whether one, matched.
 */
export function matchesApiKeyDigest(activatorKey: Uint8Array, token: string, digests: readonly string[]): boolean {
  const mine = Buffer.from(apiKeyDigest(activatorKey, token), 'hex');
  let found = false;
  for (const d of digests) {
    const theirs = Buffer.from(d, 'hex');
    // A malformed entry (not 32 bytes) cannot match; timingSafeEqual would throw on it.
    if (theirs.length === mine.length && timingSafeEqual(mine, theirs)) found = true;
  }
  return found;
}
