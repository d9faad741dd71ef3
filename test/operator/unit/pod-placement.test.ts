/**
 * Pods a platform team can run (pure translate): a Capsule of more than one replica gets a
 * PodDisruptionBudget; every pod template carries topology spread; the session workdir has a
 * sizeLimit and the container an ephemeral-storage request and limit, settable per Capsule.
 */
import { describe, expect, it } from 'vitest';
import type { Capsule, KubeObject } from '../../../operator/api/types.ts';
import { translate } from '../../../operator/translate/index.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';

const secret = { name: 'store', resourceVersion: '1', keys: ['url'] };
function render(spec: Capsule['spec']): KubeObject[] {
  const capsule: Capsule = { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'agent', namespace: 'team', uid: 'u1' }, spec };
  const r = translate({ capsule, hooks: {}, secrets: { store: secret }, callers: [], capsulePorts: {}, options: defaultOptions() });
  expect(r.problems.filter((p) => p.fatal)).toEqual([]);
  return r.objects;
}
const shared = { postgres: { urlSecretRef: { name: 'store', key: 'url' }, address: '10.20.0.5:5432' } };
const podSpec = (objects: KubeObject[]) => (objects.find((o) => o.kind === 'Deployment') as any).spec.template.spec;

describe('disruption budget and spread', () => {
  it('a Capsule of more than one replica gets a PodDisruptionBudget allowing one pod down at a time, over its own pods', () => {
    const pdb = render({ replicas: 3, store: shared }).find((o) => o.kind === 'PodDisruptionBudget') as any;
    expect(pdb).toBeDefined();
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.metadata).toMatchObject({ name: 'agent', namespace: 'team', ownerReferences: [{ kind: 'Capsule', uid: 'u1', controller: true }] });
    expect(pdb.spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'capsule', 'murmur.io/capsule': 'agent' } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
  });

  it('a Capsule of one replica (or none) gets no PodDisruptionBudget, which would block every drain', () => {
    for (const spec of [{}, { replicas: 1 }, { replicas: 0 }]) expect(render(spec).some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
  });

  it('every pod template spreads the pods over nodes and zones, the same whatever replicas is (scaling never rolls the pods)', () => {
    const one = podSpec(render({ store: shared }));
    const three = podSpec(render({ replicas: 3, store: shared }));
    expect(one.topologySpreadConstraints.map((t: any) => [t.topologyKey, t.maxSkew, t.whenUnsatisfiable])).toEqual([
      ['kubernetes.io/hostname', 1, 'ScheduleAnyway'],
      ['topology.kubernetes.io/zone', 1, 'ScheduleAnyway'],
    ]);
    expect(one.topologySpreadConstraints[0].labelSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'capsule', 'murmur.io/capsule': 'agent' } });
    expect(three).toEqual(one);
  });
});

describe('local disk', () => {
  it('the workdir emptyDir has a 1Gi sizeLimit and the container an ephemeral-storage request and limit by default', () => {
    const spec = podSpec(render({}));
    expect(spec.volumes.find((v: any) => v.name === 'workdir')).toEqual({ name: 'workdir', emptyDir: { sizeLimit: '1Gi' } });
    expect(spec.containers[0].resources.requests['ephemeral-storage']).toBe('256Mi');
    expect(spec.containers[0].resources.limits['ephemeral-storage']).toBe('1536Mi');
  });

  it('spec.workdirSizeLimit sizes the workdir and the default ephemeral-storage limit follows it', () => {
    const spec = podSpec(render({ workdirSizeLimit: '4Gi' }));
    expect(spec.volumes.find((v: any) => v.name === 'workdir').emptyDir).toEqual({ sizeLimit: '4Gi' });
    expect(spec.containers[0].resources.limits['ephemeral-storage']).toBe('4608Mi');
  });

  it('ephemeral-storage given in spec.resources is kept, and the other resources as given', () => {
    const spec = podSpec(render({ resources: { requests: { cpu: '1', 'ephemeral-storage': '1Gi' }, limits: { memory: '2Gi', 'ephemeral-storage': '3Gi' } } }));
    expect(spec.containers[0].resources).toEqual({ requests: { cpu: '1', 'ephemeral-storage': '1Gi' }, limits: { memory: '2Gi', 'ephemeral-storage': '3Gi' } });
  });
});
