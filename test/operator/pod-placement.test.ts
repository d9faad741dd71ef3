/**
 * Pods a platform team can run (issue 38 §6), on the real API server with the in-process
 * operator: the PodDisruptionBudget of a Capsule above one replica is applied, held by the real
 * disruption controller to one pod down at a time, and pruned when the Capsule goes back to one
 * replica; scaling leaves the pod template alone; the workdir size limit and ephemeral-storage
 * reach the Deployment, and a size that is not one is refused at admission naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operator } from '../../operator/operator.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, kubectl, kubectlOk, newNamespace, operator, resynced } from './helpers.ts';

let ns = '';
let op: Operator;

const capsuleYaml = (name: string, extra = '') => `apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: ${name} }
spec:
  artifacts:
    - { name: drv, runtime: driver, version: 1.0.0 }
  inference: { driver: { artifact: drv }, model: m, endpoint: 'https://api.anthropic.com' }
${extra}`;
const apply = (yaml: string) => kubectl(['apply', '-n', ns, '-f', '-'], yaml);
const deployment = (name: string) => client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
const pdb = (name: string) => client.get<any>(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/${name}`);

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-placement');
  op = await operator([ns]);
  await eventually('operator ready', () => op.ready());
});

afterAll(async () => {
  await op?.stop();
  await deleteNamespace(ns);
});

describe('disruption budget', () => {
  it('a Capsule scaled to 3 gets a PodDisruptionBudget allowing one pod down at a time, pruned when it goes back to 1; the pod template never changes', async () => {
    expect(
      (await apply(`apiVersion: v1\nkind: Secret\nmetadata: { name: ha-store }\nstringData: { url: 'postgresql://murmur@10.20.0.5:5432/capsules' }\n`)).code,
    ).toBe(0);
    const applied = await apply(capsuleYaml('ha', "  store: { postgres: { urlSecretRef: { name: ha-store, key: url }, address: '10.20.0.5:5432' } }\n"));
    expect(applied.code, applied.stderr).toBe(0);
    const one = await eventually('ha applied', async () => (await deployment('ha'))?.spec.template);
    expect(await pdb('ha')).toBeUndefined();

    await kubectlOk(['scale', 'capsule', 'ha', '-n', ns, '--replicas=3']);
    const budget = await eventually('PodDisruptionBudget applied', () => pdb('ha'));
    expect(budget.spec).toMatchObject({ maxUnavailable: 1, selector: { matchLabels: { 'murmur.io/capsule': 'ha' } } });
    expect(budget.metadata.ownerReferences).toMatchObject([{ kind: 'Capsule', name: 'ha', controller: true }]);
    await eventually('Deployment scaled', async () => (await deployment('ha'))?.spec.replicas === 3);
    expect((await deployment('ha')).spec.template).toEqual(one);

    if (cluster.controllerManager && cluster.kwok) {
      // The real disruption controller's verdict over the 3 running pods: one may be evicted, no more.
      const status = await eventually(
        'disruption controller counted 3 healthy pods',
        async () => {
          const s = (await pdb('ha'))?.status;
          return s?.expectedPods === 3 && s.currentHealthy === 3 ? s : undefined;
        },
        90_000,
      );
      expect(status).toMatchObject({ desiredHealthy: 2, disruptionsAllowed: 1 });
    }

    await kubectlOk(['scale', 'capsule', 'ha', '-n', ns, '--replicas=1']);
    await eventually('PodDisruptionBudget pruned', async () => (await pdb('ha')) === undefined);
    await resynced(op.controller()!);
    expect(await pdb('ha')).toBeUndefined();
    expect((await deployment('ha')).spec.template).toEqual(one);
  }, 120_000);
});

describe('local disk', () => {
  it('spec.workdirSizeLimit and ephemeral-storage reach the Deployment the API server accepted', async () => {
    const applied = await apply(capsuleYaml('disk', '  workdirSizeLimit: 300Mi\n  resources: { requests: { memory: 256Mi, ephemeral-storage: 128Mi } }\n'));
    expect(applied.code, applied.stderr).toBe(0);
    const spec = await eventually('disk applied', async () => (await deployment('disk'))?.spec.template.spec);
    expect(spec.volumes.find((v: any) => v.name === 'workdir').emptyDir).toEqual({ sizeLimit: '300Mi' });
    expect(spec.containers[0].resources).toEqual({ requests: { memory: '256Mi', 'ephemeral-storage': '128Mi' }, limits: { 'ephemeral-storage': '812Mi' } });
  });

  it('a workdirSizeLimit that is not a size is refused at kubectl apply, naming the field', async () => {
    const r = await apply(capsuleYaml('bad-disk', '  workdirSizeLimit: lots\n'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.workdirSizeLimit');
  });
});
