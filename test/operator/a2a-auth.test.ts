/**
 * `spec.a2a.auth` through the operator on the real API server: the API server accepts the
 * rendered pod template (projected ServiceAccount tokens with audiences, the API-key Secret
 * volume); a missing API-key Secret blocks the Capsule with MissingSecret and is picked up when
 * it appears; rotating it rolls the pods; steady state writes nothing; a caller capsule gets a
 * token projected for its peer's URL and the peer lists it as a trusted caller; and the pod that
 * kwok starts from that template carries exactly that projection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capsule } from '../../operator/api/types.ts';
import { ANNOTATION_CONFIG_HASH } from '../../operator/translate/builders/common.ts';
import type { Operator } from '../../operator/operator.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, kubectlOk, newNamespace, operator } from './helpers.ts';

let ns = '';
let op: Operator;
const get = (path: string) => client.get<any>(path);
const capsule = (name: string) => get(`/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/${name}`) as Promise<Capsule | undefined>;
const deployment = (name: string) => get(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
const ready = (c: Capsule | undefined) => c?.status?.conditions?.find((x) => x.type === 'Ready');

async function apply(yaml: string): Promise<void> {
  await kubectlOk(['apply', '-n', ns, '-f', '-'], yaml);
}

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-a2a-auth');
  op = await operator([ns], { resyncMs: 500 });
  await eventually('operator ready', () => op.ready());
});

afterAll(async () => {
  await op?.stop();
  await deleteNamespace(ns);
});

describe('A2A authentication rendered by the operator', () => {
  it('an API-key Secret that is missing blocks the Capsule (MissingSecret); once it exists the pods mount it for --api-keys, and rotating it rolls them', async () => {
    await apply(`apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: gateway }
spec:
  a2a: { auth: { apiKeys: { secretName: gateway-keys }, trustedCallers: ['apikey:ci-bot'] } }
`);
    const blocked = await eventually('MissingSecret', async () => {
      const c = await capsule('gateway');
      return ready(c)?.reason === 'MissingSecret' ? c : undefined;
    });
    expect(ready(blocked)!.message).toContain("Secret 'gateway-keys' (a2a.auth.apiKeys) not found");
    expect(await deployment('gateway')).toBeUndefined();

    await kubectlOk(['create', 'secret', 'generic', 'gateway-keys', '-n', ns, '--from-literal=ci-bot=0123456789abcdef0123']);
    const dep = await eventually('Deployment', () => deployment('gateway'));
    const pod = dep.spec.template.spec;
    const args: string[] = pod.containers[0].args;
    expect(args).toEqual(expect.arrayContaining(['--token-review', '--api-keys', '/var/run/secrets/murmur/a2a-api-keys']));
    expect(args).not.toContain('--anonymous');
    expect(pod.volumes.find((v: any) => v.name === 'a2a-api-keys').secret.secretName).toBe('gateway-keys');
    expect(pod.containers[0].env.find((e: any) => e.name === 'MURMUR_A2A_TRUSTED_CALLERS').value).toBe('apikey:ci-bot');

    const hash = dep.spec.template.metadata.annotations[ANNOTATION_CONFIG_HASH];
    await kubectlOk([
      'create',
      'secret',
      'generic',
      'gateway-keys',
      '-n',
      ns,
      '--from-literal=ci-bot=fedcba9876543210fedc',
      '--dry-run=client',
      '-o',
      'yaml',
    ]).then((yaml) => kubectlOk(['apply', '-n', ns, '-f', '-'], yaml));
    await eventually('rolled on rotation', async () => (await deployment('gateway'))?.spec.template.metadata.annotations[ANNOTATION_CONFIG_HASH] !== hash);
  });

  it("a caller gets a projected token for its peer's URL, the peer lists it as trusted; the API server accepts the templates and steady state writes nothing", async () => {
    await apply(`apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: callee }
spec: { servicePort: 9000 }
---
apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: caller }
spec:
  capabilities: { network: { allow: ['capsule://${ns}/callee'] } }
  a2a: { auth: { anonymous: true } }
`);
    const caller = await eventually('caller projects a token for the callee', async () => {
      const d = await deployment('caller');
      return d?.spec.template.spec.volumes.some((v: any) => v.name === 'a2a-peer-tokens') ? d : undefined;
    });
    expect(caller.spec.template.spec.volumes.find((v: any) => v.name === 'a2a-peer-tokens').projected.sources).toEqual([
      { serviceAccountToken: { audience: `http://callee.${ns}.svc.cluster.local:9000/`, expirationSeconds: 3600, path: `callee.${ns}.svc.cluster.local` } },
    ]);
    expect(caller.spec.template.spec.containers[0].args).toEqual(expect.arrayContaining(['--token-review', '--anonymous']));
    const callee = await eventually('callee trusts the caller', async () => {
      const d = await deployment('callee');
      const env = d?.spec.template.spec.containers[0].env.find((e: any) => e.name === 'MURMUR_A2A_TRUSTED_CALLERS');
      return env?.value === `system:serviceaccount:${ns}:caller` ? d : undefined;
    });
    const calleeArgs: string[] = callee.spec.template.spec.containers[0].args;
    expect(calleeArgs[calleeArgs.indexOf('--public-url') + 1]).toBe(`http://callee.${ns}.svc.cluster.local:9000/`);

    // Steady state: resync passes apply nothing (the API server's defaults of the projected volumes included).
    await eventually('settled', async () => ready(await capsule('caller'))?.status !== undefined && ready(await capsule('callee'))?.status !== undefined);
    const before = await op.metrics.total('capsule_operator_writes_total', { verb: 'apply' });
    const passes = await op.metrics.total('capsule_operator_reconcile_total');
    await eventually('three resync passes', async () => (await op.metrics.total('capsule_operator_reconcile_total')) >= passes + 6, 30_000);
    expect(await op.metrics.total('capsule_operator_writes_total', { verb: 'apply' })).toBe(before);
  });

  it('when the peer stops taking ServiceAccount tokens, its callers stop presenting one (it would be refused)', async () => {
    await kubectlOk([
      '-n',
      ns,
      'patch',
      'capsule',
      'callee',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { a2a: { auth: { serviceAccounts: false, anonymous: true } } } }),
    ]);
    await eventually('the caller drops the projection', async () => {
      const d = await deployment('caller');
      return d && !d.spec.template.spec.volumes.some((v: any) => v.name === 'a2a-peer-tokens');
    });
    // The callee itself re-renders in its own reconcile (not ordered with its caller's).
    await eventually('the callee drops --token-review', async () =>
      (await deployment('callee'))?.spec.template.spec.containers[0].args.includes('--anonymous'),
    );
    expect((await deployment('callee')).spec.template.spec.containers[0].args).not.toContain('--token-review');
    await kubectlOk(['-n', ns, 'patch', 'capsule', 'callee', '--type=json', '-p', JSON.stringify([{ op: 'remove', path: '/spec/a2a' }])]);
    await eventually('and projects it again', async () =>
      (await deployment('caller'))?.spec.template.spec.volumes.some((v: any) => v.name === 'a2a-peer-tokens'),
    );
  });

  it("the pod started from the template carries the projection and runs as the capsule's own ServiceAccount", async () => {
    if (!cluster.podsBecomeReady) throw new Error('this test needs pods to be created from Deployments (controller-manager, scheduler, kwok)');
    const pod = await eventually('a caller pod of the current template', async () =>
      (await client.list<any>(`/api/v1/namespaces/${ns}/pods`, { labelSelector: 'murmur.io/capsule=caller' })).items.find((p: any) =>
        p.spec.volumes.some((v: any) => v.name === 'a2a-peer-tokens'),
      ),
    );
    expect(pod.spec.serviceAccountName).toBe('caller');
    expect(pod.spec.volumes.find((v: any) => v.name === 'a2a-peer-tokens').projected.sources[0].serviceAccountToken.audience).toBe(
      `http://callee.${ns}.svc.cluster.local:9000/`,
    );
    expect((await get(`/api/v1/namespaces/${ns}/serviceaccounts/caller`)).automountServiceAccountToken).toBe(false);
  });
});
