/**
 * The Capsule's store at admission, on the real API server: `replicas > 1` needs the shared store
 * (`spec.store.postgres`), refused otherwise with a message naming spec.replicas; embedded and
 * postgres are exclusive; a postgres store needs its Secret reference and the server's address.
 * And the same rule on the /scale subresource (kubectl scale, an HPA).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteNamespace, ensureCrds, kubectl, newNamespace } from './helpers.ts';

let ns = '';
beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-store');
});
afterAll(() => deleteNamespace(ns));

function capsule(name: string, spec: string): string {
  return `apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: ${name} }\nspec:\n${spec}`;
}

const PG = "  store: { postgres: { urlSecretRef: { name: capsule-store, key: url }, address: 'postgres.db.svc.cluster.local:5432' } }\n";

describe('Capsule store admission', () => {
  it('refuses replicas > 1 on the embedded store (default or explicit), naming spec.replicas and the shared store', async () => {
    for (const [name, spec] of [
      ['dflt', '  replicas: 3\n'],
      ['embed', '  replicas: 2\n  store: { embedded: {} }\n'],
    ] as const) {
      const r = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], capsule(name, spec));
      expect(r.code, name).not.toBe(0);
      expect(r.stderr, name).toContain('spec.replicas: Invalid value');
      expect(r.stderr, name).toContain('replicas > 1 needs the shared store: set spec.store.postgres');
      expect(r.stderr, name).toContain('[E-OP-011]');
    }
  });

  it('accepts replicas > 1 on the shared PostgreSQL store, and one replica on the embedded one', async () => {
    const a = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], capsule('shared', `  replicas: 3\n${PG}`));
    expect(a.code, a.stderr).toBe(0);
    const b = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], capsule('single', '  replicas: 1\n  store: { embedded: {} }\n'));
    expect(b.code, b.stderr).toBe(0);
  });

  it('refuses embedded and postgres together, and a postgres store without its address or Secret key', async () => {
    const both = await kubectl(
      ['apply', '--dry-run=server', '-n', ns, '-f', '-'],
      capsule('both', "  store: { embedded: {}, postgres: { urlSecretRef: { name: s, key: url }, address: 'db:5432' } }\n"),
    );
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('give store.embedded or store.postgres, not both');
    const noAddr = await kubectl(
      ['apply', '--dry-run=server', '-n', ns, '-f', '-'],
      capsule('noaddr', '  store: { postgres: { urlSecretRef: { name: s, key: url } } }\n'),
    );
    expect(noAddr.code).not.toBe(0);
    expect(noAddr.stderr).toMatch(/spec\.store\.postgres\.address: Required value/);
    const noKey = await kubectl(
      ['apply', '--dry-run=server', '-n', ns, '-f', '-'],
      capsule('nokey', "  store: { postgres: { urlSecretRef: { name: s }, address: 'db:5432' } }\n"),
    );
    expect(noKey.code).not.toBe(0);
    expect(noKey.stderr).toMatch(/spec\.store\.postgres\.urlSecretRef\.key: Required value/);
  });

  it('the /scale subresource (kubectl scale) is held to the same rule', async () => {
    const c = await kubectl(['apply', '-n', ns, '-f', '-'], capsule('scaled', '  replicas: 1\n'));
    expect(c.code, c.stderr).toBe(0);
    const up = await kubectl(['scale', '-n', ns, 'capsule/scaled', '--replicas=3']);
    expect(up.code).not.toBe(0);
    expect(up.stderr).toContain('replicas > 1 needs the shared store');
    const ok = await kubectl(['apply', '-n', ns, '-f', '-'], capsule('scaled-pg', `  replicas: 1\n${PG}`));
    expect(ok.code, ok.stderr).toBe(0);
    const up2 = await kubectl(['scale', '-n', ns, 'capsule/scaled-pg', '--replicas=3']);
    expect(up2.code, up2.stderr).toBe(0);
  });
});
