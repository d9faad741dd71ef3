/**
 * Sleeping Capsules at admission, on the real API server: spec.sleep.afterIdle is a duration of at
 * least 10s or never; an explicit afterIdle is refused on the emptyDir store (naming both durable
 * stores), and admitted with API keys; a store claim is one pod's; the status a sleeping capsule
 * shows (phase, sleep, its API-key digests) is stored, and `kubectl get capsules` shows it as State.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteNamespace, ensureCrds, kubectl, newNamespace } from './helpers.ts';

let ns = '';
beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-sleep');
});
afterAll(() => deleteNamespace(ns));

const capsule = (name: string, spec: string) => `apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: ${name} }\nspec:\n${spec}`;
const dryRun = (name: string, spec: string) => kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], capsule(name, spec));
const CLAIM = '  store: { embedded: { volumeClaim: { size: 1Gi } } }\n';
const PG = "  store: { postgres: { urlSecretRef: { name: capsule-store, key: url }, address: 'postgres.db.svc.cluster.local:5432' } }\n";

describe('Capsule sleep admission', () => {
  it('refuses an afterIdle that is not a duration of at least 10s, naming the field and the forms', async () => {
    for (const v of ['soon', '5s', '1d', '9999ms', '15']) {
      const r = await dryRun('bad', `  sleep: { afterIdle: '${v}' }\n${CLAIM}`);
      expect(r.code, v).not.toBe(0);
      expect(r.stderr, v).toContain('spec.sleep.afterIdle: Invalid value');
      expect(r.stderr, v).toContain(`invalid spec.sleep.afterIdle '${v}': give a duration of at least 10s such as 30s, 15m or 1h30m, or never [E-OP-011]`);
    }
  });

  it('refuses an explicit afterIdle on the emptyDir store (default or explicit), naming both durable stores', async () => {
    for (const [name, store] of [
      ['dflt', ''],
      ['embed', '  store: { embedded: {} }\n'],
    ] as const) {
      const r = await dryRun(name, `  sleep: { afterIdle: 15m }\n${store}`);
      expect(r.code, name).not.toBe(0);
      expect(r.stderr, name).toContain('spec.sleep.afterIdle: Forbidden');
      expect(r.stderr, name).toMatch(
        /set spec\.store\.embedded\.volumeClaim \(e\.g\. \{size: 1Gi\}\) or spec\.store\.postgres, or afterIdle: never.*\[E-OP-011\]/,
      );
    }
  });

  it('admits an explicit afterIdle with API keys, on a durable store', async () => {
    for (const [name, store] of [
      ['keys-pg', PG],
      ['keys-claim', CLAIM],
    ] as const) {
      const r = await dryRun(name, `  sleep: { afterIdle: 15m }\n  a2a: { auth: { apiKeys: { secretName: keys }, serviceAccounts: true } }\n${store}`);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
    }
  });

  it('refuses a store claim with more than one replica, naming the claim', async () => {
    const r = await dryRun('crowd', `  replicas: 2\n${CLAIM}`);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.store.embedded.volumeClaim: Forbidden');
    expect(r.stderr).toContain("one pod's SQLite file (a ReadWriteOnce claim)");
  });

  it('accepts sleep on a durable store, never on any store, and the defaults', async () => {
    for (const [name, spec] of [
      ['claim', `  sleep: { afterIdle: 15m }\n${CLAIM}`],
      ['claim-dflt', '  store: { embedded: { volumeClaim: {} } }\n'],
      ['pg', `  replicas: 3\n  sleep: { afterIdle: 1h30m }\n${PG}`],
      ['floor', `  sleep: { afterIdle: 10s }\n${PG}`],
      ['never', '  sleep: { afterIdle: never }\n  a2a: { auth: { apiKeys: { secretName: keys } } }\n'],
      ['class', "  store: { embedded: { volumeClaim: { storageClassName: fast-ssd, size: '2.5Gi' } } }\n"],
    ] as const) {
      const r = await dryRun(name, spec);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
    }
  });

  it('stores the phase and sleep status, and kubectl get shows the State', async () => {
    const c = await kubectl(['apply', '-n', ns, '-f', '-'], capsule('napper', CLAIM));
    expect(c.code, c.stderr).toBe(0);
    const status = { phase: 'Sleeping', sleep: { since: '2025-01-02T03:04:05Z', agentCard: '{"name":"napper"}' } };
    const p = await kubectl(['patch', '-n', ns, 'capsule/napper', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
    expect(p.code, p.stderr).toBe(0);
    const get = await kubectl(['get', '-n', ns, 'capsule/napper']);
    expect(get.stdout.split('\n')[0]).toMatch(/^NAME\s+STATE\s+READY/);
    expect(get.stdout.split('\n')[1]).toMatch(/^napper\s+Sleeping\s/);
    const bad = await kubectl(['patch', '-n', ns, 'capsule/napper', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Dozing"}}']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('status.phase: Unsupported value: "Dozing"');
    const big = await kubectl([
      'patch',
      '-n',
      ns,
      'capsule/napper',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { sleep: { agentCard: 'x'.repeat(32769) } } }),
    ]);
    expect(big.code).not.toBe(0);
    expect(big.stderr).toContain('status.sleep.agentCard: Too long');
  });

  it('stores the API-key digests of a sleeping capsule, and only 64-hex digests', async () => {
    const digests = ['0'.repeat(64), 'ab'.repeat(32)];
    const p = await kubectl([
      'patch',
      '-n',
      ns,
      'capsule/napper',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { sleep: { apiKeyDigests: digests } } }),
    ]);
    expect(p.code, p.stderr).toBe(0);
    const got = await kubectl(['get', '-n', ns, 'capsule/napper', '-o', 'jsonpath={.status.sleep.apiKeyDigests}']);
    expect(JSON.parse(got.stdout)).toEqual(digests);
    for (const bad of ['a-key-in-clear-0123456789', 'AB'.repeat(32), 'ab'.repeat(33)]) {
      const r = await kubectl([
        'patch',
        '-n',
        ns,
        'capsule/napper',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { sleep: { apiKeyDigests: [bad] } } }),
      ]);
      expect(r.code, bad).not.toBe(0);
      expect(r.stderr, bad).toContain('status.sleep.apiKeyDigests[0]');
    }
  });
});
