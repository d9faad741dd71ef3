/**
 * What translate renders for a sleeping Capsule, on the real API server (with its controller
 * manager): the store claim, the activator's EndpointSlice and the Deployment at 0 replicas are
 * accepted as the operator applies them (server-side apply), and the EndpointSlice controller,
 * which makes the Service's own slice, leaves the operator's slice alone — the routing of the
 * design rests on it (kube-proxy merges every slice labelled with the Service's name).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capsule, KubeObject } from '../../operator/api/types.ts';
import { FIELD_MANAGER } from '../../operator/translate/builders/common.ts';
import { translate, type SleepInput } from '../../operator/translate/index.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { client, deleteNamespace, ensureCrds, eventually, kubectl, newNamespace } from './helpers.ts';

let ns = '';
let capsule: Capsule;
beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-sleep-objects');
  const spec = { store: { embedded: { volumeClaim: { size: '1Gi' } } } };
  const r = await kubectl(
    ['apply', '-n', ns, '-o', 'json', '-f', '-'],
    JSON.stringify({ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'napper' }, spec }),
  );
  expect(r.code, r.stderr).toBe(0);
  capsule = JSON.parse(r.stdout) as Capsule;
});
afterAll(() => deleteNamespace(ns));

const ACTIVATOR = { namespace: 'capsule-system', podLabels: { 'app.kubernetes.io/component': 'activator' }, port: 8012 };

/** Translate with the sleep state and apply every object as the operator does (server-side apply, its field manager). */
async function render(sleep: SleepInput, c: Capsule = capsule): Promise<KubeObject[]> {
  const r = translate({ capsule: c, hooks: {}, secrets: {}, callers: [], capsulePorts: {}, options: defaultOptions({ activator: ACTIVATOR }), sleep });
  expect(r.problems).toEqual([]);
  const list = { apiVersion: 'v1', kind: 'List', items: r.objects };
  const a = await kubectl(['apply', '--server-side', '--force-conflicts', `--field-manager=${FIELD_MANAGER}`, '-n', ns, '-f', '-'], JSON.stringify(list));
  expect(a.code, a.stderr).toBe(0);
  return r.objects;
}

const get = <T>(path: string) => client.get<KubeObject & T>(path);
type Slice = { endpoints?: Array<{ addresses: string[]; conditions: { ready: boolean } }>; ports: Array<{ name: string; port: number }> };

describe('a sleeping Capsule on the API server', () => {
  it('asleep: the claim, the Deployment at 0 replicas (Recreate), the activator slice ready, kept by the EndpointSlice controller', async () => {
    await render({ phase: 'Sleeping', readyPods: 0, activatorIPs: ['10.244.1.9', '10.244.0.17'] });
    const pvc = await get<{ spec: { accessModes: string[]; resources: { requests: { storage: string } } } }>(
      `/api/v1/namespaces/${ns}/persistentvolumeclaims/napper-store`,
    );
    expect(pvc?.spec).toMatchObject({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
    expect(pvc?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Capsule', name: 'napper', uid: capsule.metadata.uid });
    const dep = await get<{ spec: { replicas: number; strategy: { type: string } } }>(`/apis/apps/v1/namespaces/${ns}/deployments/napper`);
    expect(dep?.spec.replicas).toBe(0);
    expect(dep?.spec.strategy).toEqual({ type: 'Recreate' });

    // The Service's own slice (made by the EndpointSlice controller) appears; ours is still as we wrote it.
    const own = await eventually('the EndpointSlice controller made the Service its slice', async () => {
      const l = await client.list<KubeObject>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
        labelSelector: 'kubernetes.io/service-name=napper,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io',
      });
      return l.items.length > 0 && l.items;
    });
    expect(own.map((s) => s.metadata.name)).not.toContain('napper-activator');
    const ours = await get<Slice>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/napper-activator`);
    expect(ours?.metadata.labels).toMatchObject({
      'kubernetes.io/service-name': 'napper',
      'endpointslice.kubernetes.io/managed-by': 'capsule-operator.murmur.dev',
    });
    expect(ours?.ports).toEqual([{ name: 'a2a', port: 8012, protocol: 'TCP' }]);
    expect(ours?.endpoints?.map((e) => [e.addresses[0], e.conditions.ready])).toEqual([
      ['10.244.0.17', true],
      ['10.244.1.9', true],
    ]);
  });

  it('awake with a ready pod: the slice is not ready, the Deployment back to spec.replicas', async () => {
    await render({ phase: 'Awake', readyPods: 1, activatorIPs: ['10.244.0.17'] });
    const ours = await get<Slice>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/napper-activator`);
    expect(ours?.endpoints?.map((e) => [e.addresses[0], e.conditions.ready])).toEqual([['10.244.0.17', false]]);
    const dep = await get<{ spec: { replicas: number } }>(`/apis/apps/v1/namespaces/${ns}/deployments/napper`);
    expect(dep?.spec.replicas).toBe(1);
  });

  it('a Capsule that moves its store onto a claim switches its rollouts from RollingUpdate to Recreate', async () => {
    // A Capsule of its own (the owner of what is applied for it, so the garbage collector keeps it).
    const c = await kubectl(
      ['apply', '-n', ns, '-o', 'json', '-f', '-'],
      JSON.stringify({ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'mover' }, spec: {} }),
    );
    expect(c.code, c.stderr).toBe(0);
    const mover = JSON.parse(c.stdout) as Capsule;
    await render({ phase: 'Awake', readyPods: 0, activatorIPs: [] }, mover);
    const path = `/apis/apps/v1/namespaces/${ns}/deployments/mover`;
    expect((await get<{ spec: { strategy: { type: string } } }>(path))?.spec.strategy.type).toBe('RollingUpdate');
    await render({ phase: 'Awake', readyPods: 0, activatorIPs: [] }, { ...mover, spec: { store: { embedded: { volumeClaim: {} } } } });
    expect((await get<{ spec: { strategy: unknown } }>(path))?.spec.strategy).toEqual({ type: 'Recreate' });
  });
});
