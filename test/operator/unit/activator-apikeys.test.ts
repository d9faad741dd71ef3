/**
 * The activator's API-key fence (operator/activator/auth.ts): a bearer API key of a sleeping
 * Capsule that takes them passes when its HMAC under the activator key is among the digests the
 * operator published (status.sleep.apiKeyDigests), checked before a ServiceAccount token as the
 * runtime checks it; anything else is the 401 that wakes nothing (E-OP-063). The digests here are
 * made as the operator makes them, from a Secret's data (runtime/contracts/api-key.ts), and checked
 * against the runtime's own reading of that Secret mounted as a folder.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Authenticator, type Reviewer } from '../../../operator/activator/auth.ts';
import type { Capsule } from '../../../operator/api/types.ts';
import { secretApiKeyDigests } from '../../../runtime/contracts/api-key.ts';
import { readApiKeys } from '../../../runtime/a2a/server/auth-config.ts';

const ACTIVATOR_KEY = Buffer.from('kkkkkkkkkkkkkkkk-activator-key-for-tests-0123456789');
const KEY_A = 'alpha-key-0123456789abcdef';
const KEY_B = 'bravo-key-0123456789abcdef';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const hmac = (key: string) => createHmac('sha256', ACTIVATOR_KEY).update(key).digest('hex');

/** A sleeping Capsule taking API keys, with the digests of `data` (a Secret's data) in its status. */
function keyed(name: string, data: Record<string, string>, more: Partial<NonNullable<Capsule['spec']['a2a']>['auth']> = {}): Capsule {
  return {
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: 'ns' },
    spec: { a2a: { auth: { apiKeys: { secretName: `${name}-keys` }, ...more } } } as Capsule['spec'],
    status: { phase: 'Sleeping', a2aUrl: `http://${name}.ns.svc.cluster.local:8080`, sleep: { apiKeyDigests: secretApiKeyDigests(ACTIVATOR_KEY, data) } },
  };
}

/** A TokenReview that must not be asked (an API key is not a JWT), and counts if it is. */
function reviewer(): Reviewer & { calls: number } {
  const r = Object.assign(
    async () => {
      r.calls++;
      return { authenticated: false };
    },
    { calls: 0 },
  );
  return r;
}

const capA = keyed('a', { ci: b64(KEY_A) });
const capB = keyed('b', { ci: b64(KEY_B) });

describe('the activator’s API-key fence', () => {
  it('a valid API key of the capsule passes, without a TokenReview', async () => {
    const review = reviewer();
    const auth = new Authenticator(review, ACTIVATOR_KEY);
    expect(await auth.check(capA, `Bearer ${KEY_A}`)).toBeUndefined();
    expect(await auth.check(capA, [`bearer   ${KEY_A}  `])).toBeUndefined();
    expect(review.calls).toBe(0);
  });

  it('a wrong API key gets the 401 (E-OP-063) that wakes nothing', async () => {
    const auth = new Authenticator(reviewer(), ACTIVATOR_KEY);
    for (const token of [`${KEY_A}x`, KEY_A.slice(0, -1), 'not-a-key-at-all-but-long', ACTIVATOR_KEY.toString()]) {
      const r = await auth.check(capA, `Bearer ${token}`);
      expect(r, token).toMatchObject({ reason: 'unauthenticated', status: 401 });
      expect(r!.message).toBe('invalid credentials: capsule ns/a was not woken [E-OP-063]');
    }
  });

  it('an API key of another capsule gets 401', async () => {
    const auth = new Authenticator(reviewer(), ACTIVATOR_KEY);
    expect(await auth.check(capB, `Bearer ${KEY_B}`)).toBeUndefined();
    expect(await auth.check(capA, `Bearer ${KEY_B}`)).toMatchObject({ status: 401 });
    expect(await auth.check(capB, `Bearer ${KEY_A}`)).toMatchObject({ status: 401 });
  });

  it('the digest of the key alone is no key: sending a published digest gets 401', async () => {
    const auth = new Authenticator(reviewer(), ACTIVATOR_KEY);
    expect(await auth.check(capA, `Bearer ${hmac(KEY_A)}`)).toMatchObject({ status: 401 });
  });

  it('digests made with another activator key do not match (the operator and the activator must share it)', async () => {
    const other = new Authenticator(reviewer(), Buffer.from('another-activator-key-0123456789abcdef'));
    expect(await other.check(capA, `Bearer ${KEY_A}`)).toMatchObject({ status: 401 });
  });

  it('without an activator key, or once the capsule takes no API keys, an API key is refused', async () => {
    expect(await new Authenticator(reviewer()).check(capA, `Bearer ${KEY_A}`)).toMatchObject({ status: 401 });
    const noKeys = { ...capA, spec: { a2a: { auth: {} } } } as Capsule;
    expect(await new Authenticator(reviewer(), ACTIVATOR_KEY).check(noKeys, `Bearer ${KEY_A}`)).toMatchObject({ status: 401 });
  });

  it('a JWT-shaped token that is no API key still goes to the TokenReview, after the keys', async () => {
    const review = reviewer();
    const auth = new Authenticator(review, ACTIVATOR_KEY);
    expect(await auth.check(capA, 'Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).toMatchObject({ status: 401 });
    expect(review.calls).toBe(1);
  });
});

describe('API-key digests of a Secret (runtime/contracts/api-key.ts)', () => {
  it('are HMAC-SHA256 under the activator key of each key, hex, sorted and without repeats', () => {
    const d = secretApiKeyDigests(ACTIVATOR_KEY, { one: b64(KEY_B), two: b64(KEY_A), three: b64(KEY_A) });
    expect(d).toEqual([hmac(KEY_A), hmac(KEY_B)].sort());
  });

  it('read the Secret as the runtime reads it mounted: trimmed, dot-entries skipped, short keys give none', () => {
    const data = {
      padded: b64(`  ${KEY_A}\n`),
      '.hidden': b64(KEY_B),
      short: b64('tooshort'),
      unicode: b64('clé-à-molette-0123456789'),
    };
    const digests = secretApiKeyDigests(ACTIVATOR_KEY, data);
    expect(digests).toEqual([hmac(KEY_A), hmac('clé-à-molette-0123456789')].sort());
    // The runtime's reading of the same Secret as kubelet mounts it (files behind ..data links), the short key aside
    // (mur serve refuses to start on it, E-A2A-021).
    const root = mkdtempSync(join(tmpdir(), 'apikeys-'));
    const real = join(root, '..2025_01_01');
    mkdirSync(real);
    for (const [name, v] of Object.entries(data)) if (name !== 'short') writeFileSync(join(real, name), Buffer.from(v, 'base64'));
    symlinkSync(real, join(root, '..data'));
    for (const name of Object.keys(data)) if (name !== 'short' && !name.startsWith('.')) symlinkSync(join('..data', name), join(root, name));
    const runtimeKeys = readApiKeys(root);
    expect(runtimeKeys.map((k) => k.name)).toEqual(['padded', 'unicode']);
    expect(runtimeKeys.map((k) => hmac(k.key)).sort()).toEqual(digests);
  });
});
