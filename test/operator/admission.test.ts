/**
 * Admission on the real API server: the Hook CRD's CEL rules refuse exactly what
 * checkHookContract() refuses, with exactly its message (every binding × mode × policy), and
 * invalid Capsules are refused with a clear message. `kubectl apply` of the invalid examples fails.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../operator/kube/client.ts';
import {
  COMMIT_POLICIES,
  EXECUTION_MODES,
  HANDLERS,
  checkHookContract,
  type CommitPolicy,
  type ExecutionMode,
  type Handler,
} from '../../runtime/contracts/commit-table.ts';
import { client, deleteNamespace, ensureCrds, kubectl, newNamespace, repoRoot } from './helpers.ts';

let ns = '';
beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-admission');
});
afterAll(() => deleteNamespace(ns));

async function dryRunHook(binding: Handler | undefined, mode: ExecutionMode | undefined, policy: CommitPolicy | undefined): Promise<string | undefined> {
  try {
    await client.create(
      {
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Hook',
        metadata: { name: 'probe', namespace: ns },
        spec: {
          artifact: { name: 'hook-a', version: '1.0.0' },
          ...(binding ? { binding } : {}),
          ...(mode ? { execution_mode: mode } : {}),
          ...(policy ? { commit_policy: policy } : {}),
        },
      },
      { dryRun: 'All' },
    );
    return undefined;
  } catch (e) {
    if (e instanceof ApiError && e.status === 422) return (e.body as { message: string }).message;
    throw e;
  }
}

describe('Hook admission (CEL from the commit table)', () => {
  it('refuses exactly what staging refuses, with the same message, for every combination', async () => {
    const combos: Array<[Handler | undefined, ExecutionMode | undefined, CommitPolicy | undefined]> = [];
    for (const b of [undefined, ...HANDLERS])
      for (const m of [undefined, ...EXECUTION_MODES]) for (const p of [undefined, ...COMMIT_POLICIES]) combos.push([b, m, p]);
    const results = await Promise.all(combos.map(([b, m, p]) => dryRunHook(b, m, p)));
    let refused = 0;
    combos.forEach(([b, m, p], i) => {
      const want = checkHookContract({ binding: b, execution_mode: m, commit_policy: p });
      const got = results[i];
      const label = `binding=${b ?? '-'} mode=${m ?? '-'} policy=${p ?? '-'}`;
      if (!want) {
        expect(got, label).toBeUndefined();
      } else {
        refused++;
        expect(got, label).toBeDefined();
        // One violation, at the field staging names, with staging's message.
        expect(got, label).toContain(`spec.${want.field}: Invalid value: `);
        // staging's message, then the stable code of a Hook admission refusal.
        expect(got, label).toMatch(new RegExp(`: ${want.message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\[E-OP-010\\]$`));
        expect(got!.split('Invalid value').length - 1, `${label}: exactly one violation`).toBe(1);
      }
    });
    expect(combos).toHaveLength(10 * 3 * 7);
    expect(refused).toBeGreaterThan(40);
  });

  it('kubectl apply of an invalid Hook fails with the commit-table message', async () => {
    const r = await kubectl(['apply', '-n', ns, '-f', join(repoRoot, 'examples/k8s/invalid/hook-bad-policy.yaml')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(checkHookContract({ binding: 'on-compaction', commit_policy: 'deny' })!.message);
    const r2 = await kubectl(['apply', '-n', ns, '-f', join(repoRoot, 'examples/k8s/invalid/hook-async-commit.yaml')]);
    expect(r2.code).not.toBe(0);
    expect(r2.stderr).toContain(checkHookContract({ binding: 'on-task-end', execution_mode: 'async', commit_policy: 'reopen-task' })!.message);
  });

  it('kubectl apply of the example Hooks succeeds and defaults the contract', async () => {
    const r = await kubectl(['apply', '-n', ns, '-f', join(repoRoot, 'examples/k8s/hooks.yaml')]);
    expect(r.stderr).toBe('');
    const h = await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${ns}/hooks/summarizer`);
    expect(h.spec.execution_mode).toBe('blocking');
    const out = await kubectl(['get', 'hk', '-n', ns]);
    expect(out.stdout).toMatch(/NAME\s+BINDING\s+MODE\s+POLICY\s+USED BY\s+AGE/);
    expect(out.stdout).toMatch(/shell-guard\s+on-shell\s+blocking\s+deny/);
  });
});

describe('Capsule admission', () => {
  it('refuses an inline API key', async () => {
    const r = await kubectl(['apply', '-n', ns, '-f', join(repoRoot, 'examples/k8s/invalid/capsule-inline-key.yaml')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('inline API keys are not accepted; store the key in a Secret and reference it with inference.apiKeySecretRef');
  });

  it('refuses an artifact URL without its sha256', async () => {
    const r = await kubectl(['apply', '-n', ns, '-f', join(repoRoot, 'examples/k8s/invalid/capsule-url-no-sha.yaml')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'spec.artifacts[0].source: Invalid value: a source is either {url, sha256} or {oci: <registry>/<repo>:<tag>@sha256:<hex>} [E-OP-011]',
    );
  });

  it.each([
    [
      {
        artifacts: [
          { name: 'a', version: '1' },
          { name: 'a', version: '2' },
        ],
      },
      'artifact names must be unique',
    ],
    [
      { artifacts: [{ name: 't', version: '1' }], inference: { driver: { artifact: 't' }, model: 'm', endpoint: 'https://api.anthropic.com' } },
      'inference.driver.artifact must name an artifact with runtime driver',
    ],
    [{ artifacts: [{ name: 'x' }] }, 'an artifact needs a version (registry reference) or a source {url, sha256}'],
    [{ capabilities: { network: { allow: ['capsule://Bad/x'] } } }, 'a capsule peer is written capsule://<namespace>/<name>'],
    [{ lifecycle: { task_acceptance: 'single', queue_depth: 3 } }, "queue_depth applies to task_acceptance 'queue' only"],
    [{ replicas: -1 }, 'should be greater than or equal to 0'],
    [
      { artifacts: [{ name: 'd', version: '1', runtime: 'driver' }], inference: { driver: { artifact: 'd' }, model: 'm' } },
      'spec.inference.endpoint: Required value',
    ],
  ])('refuses %j', async (spec, message) => {
    const err = await client
      .create({ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'probe', namespace: ns }, spec }, { dryRun: 'All' })
      .then(
        () => undefined,
        (e: ApiError) => e,
      );
    expect(err?.status).toBe(422);
    expect((err?.body as { message: string } | undefined)?.message).toContain(message);
  });

  describe('a wildcard network grant', () => {
    const probe = (allow: string[]) =>
      client
        .create(
          {
            apiVersion: 'murmur.io/v1alpha1',
            kind: 'Capsule',
            metadata: { name: 'probe', namespace: ns },
            spec: {
              capabilities: { network: { allow } },
              artifacts: [{ name: 't', version: '1', capabilities: { network: { allow } } }],
              hooks: [{ name: 'h', capabilities: { network: { allow } } }],
            },
          },
          { dryRun: 'All' },
        )
        .then(
          () => undefined,
          (e: ApiError) => (e.body as { message: string }).message,
        );

    it('is admitted capsule-wide, per artifact and per hook, alone, with a port and with a scheme', async () => {
      expect(await probe(['*.googleapis.com', '*.eu.example.com:8443', 'https://*.storage.example.com'])).toBeUndefined();
    });

    it.each(['*', '*.com', 'a.*.example.com', '*.0.0.1', 'https://*'])('%s is refused at its index in every grant', async (bad) => {
      const msg = await probe(['*.googleapis.com', bad]);
      for (const field of [
        'spec.capabilities.network.allow[1]',
        'spec.artifacts[0].capabilities.network.allow[1]',
        'spec.hooks[0].capabilities.network.allow[1]',
      ]) {
        expect(msg).toContain(
          `${field}: Invalid value: ${JSON.stringify(bad)}: invalid network.allow entry '${bad}': a wildcard is '*.' before a domain of at least two labels`,
        );
      }
      expect(msg).toContain('[E-OP-011]');
    });

    it('with port 0 is refused with the port rule', async () => {
      expect(await probe(['*.googleapis.com:0'])).toContain(
        'spec.capabilities.network.allow[0]: Invalid value: "*.googleapis.com:0": invalid network.allow entry \'*.googleapis.com:0\': use host, host:port or http(s)://host[:port] (no other scheme, no query or user:password@; port 1-65535)',
      );
    });
  });

  it('refuses a name too long to name its objects', async () => {
    const err = await client
      .create({ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'x'.repeat(51), namespace: ns }, spec: {} }, { dryRun: 'All' })
      .then(
        () => undefined,
        (e: ApiError) => e,
      );
    expect((err?.body as { message: string } | undefined)?.message).toContain('a Capsule name must be a DNS label of at most 50 characters');
  });

  describe('spec.a2a.auth', () => {
    const probe = (auth: Record<string, unknown>) =>
      client.create(
        { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'probe', namespace: ns }, spec: { a2a: { auth } } },
        { dryRun: 'All' },
      );
    it.each([
      [
        { serviceAccounts: false },
        'spec.a2a.auth: Invalid value: a2a.auth admits no caller: set serviceAccounts: true, give apiKeys.secretName, or set anonymous: true [E-OP-011]',
      ],
      [
        { apiKeys: { secretName: 'Bad_Name' } },
        "spec.a2a.auth.apiKeys.secretName: Invalid value: a2a.auth.apiKeys.secretName 'Bad_Name' is not a Secret name: lowercase letters, digits, '-' and '.' [E-OP-011]",
      ],
      [
        { trustedCallers: ['ci-bot'] },
        'spec.a2a.auth.trustedCallers[0]: Invalid value: "ci-bot": trusted caller \'ci-bot\' is not a caller name: use apikey:<holder> or system:serviceaccount:<namespace>:<name> [E-OP-011]',
      ],
      [
        { trustedCallers: ['apikey:ci-bot'] },
        'spec.a2a.auth.trustedCallers: Invalid value: a2a.auth.trustedCallers names an apikey: caller but a2a.auth.apiKeys is not set [E-OP-011]',
      ],
      [
        { serviceAccounts: false, anonymous: true, trustedCallers: ['system:serviceaccount:ns:x'] },
        'a2a.auth.trustedCallers names a ServiceAccount but a2a.auth.serviceAccounts is false [E-OP-011]',
      ],
    ])('refuses %j, naming the field', async (auth, message) => {
      const err = await probe(auth).then(
        () => undefined,
        (e: ApiError) => e,
      );
      expect(err?.status).toBe(422);
      expect((err?.body as { message: string } | undefined)?.message).toContain(message);
    });

    it('admits the valid combinations and defaults serviceAccounts: true, anonymous: false', async () => {
      for (const auth of [
        {},
        { anonymous: true, serviceAccounts: false },
        { apiKeys: { secretName: 'keys.v2' }, trustedCallers: ['apikey:ci-bot', 'system:serviceaccount:team-a:gateway'] },
      ]) {
        await expect(probe(auth), JSON.stringify(auth)).resolves.toBeDefined();
      }
      const stored = await probe({});
      expect((stored as any).spec.a2a.auth).toEqual({ anonymous: false, serviceAccounts: true });
    });
  });

  it('kubectl explain describes the fields', async () => {
    const r = await kubectl(['explain', 'capsule.spec.inference.apiKeySecretRef']);
    expect(r.stdout).toContain('Secret key holding the provider API key');
  });
});
