import { describe, expect, it } from 'vitest';
import { cacheShape, pickFields } from '../../../operator/reconcile/cache-shape.ts';
import { upToDate } from '../../../operator/reconcile/compare.ts';

const fieldsV1 = {
  'f:metadata': { 'f:labels': { 'f:murmur.io/capsule': {} } },
  'f:spec': {
    'f:replicas': {},
    'f:template': {
      'f:spec': {
        'f:containers': {
          'k:{"name":"runtime"}': { '.': {}, 'f:name': {}, 'f:args': {}, 'f:env': { 'k:{"name":"HOME"}': { '.': {}, 'f:name': {}, 'f:value': {} } } },
        },
      },
    },
  },
};
const live = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'c',
    namespace: 'ns',
    uid: 'u',
    resourceVersion: '7',
    generation: 2,
    labels: { 'murmur.io/capsule': 'c' },
    annotations: { 'deployment.kubernetes.io/revision': '3' },
    managedFields: [
      { manager: 'capsule-operator', operation: 'Apply', fieldsV1 },
      { manager: 'kube-controller-manager', operation: 'Update', fieldsV1: { 'f:status': {} } },
    ],
  },
  spec: {
    replicas: 2,
    progressDeadlineSeconds: 600,
    template: {
      spec: {
        dnsPolicy: 'ClusterFirst',
        containers: [
          { name: 'sidecar', image: 'busybox' },
          {
            name: 'runtime',
            args: ['serve'],
            terminationMessagePath: '/dev/termination-log',
            env: [
              { name: 'DEBUG', value: '1' },
              { name: 'HOME', value: '/w' },
            ],
          },
        ],
      },
    },
  },
  status: {
    observedGeneration: 2,
    replicas: 2,
    readyReplicas: 1,
    updatedReplicas: 2,
    availableReplicas: 1,
    conditions: [{ type: 'Available', status: 'False' }],
    collisionCount: 0,
  },
};
const want = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'c', namespace: 'ns', labels: { 'murmur.io/capsule': 'c' } },
  spec: { replicas: 2, template: { spec: { containers: [{ name: 'runtime', args: ['serve'], env: [{ name: 'HOME', value: '/w' }] }] } } },
};

describe('the informer cache keeps only the fields the operator set', () => {
  it('drops defaults, other managers’ fields and items, keeps ours and the rollout status', () => {
    const c = cacheShape(live as any, 'capsule-operator') as any;
    expect(c.spec).toEqual({ replicas: 2, template: { spec: { containers: [{ name: 'runtime', args: ['serve'], env: [{ name: 'HOME', value: '/w' }] }] } } });
    expect(c.metadata).toMatchObject({ name: 'c', namespace: 'ns', uid: 'u', resourceVersion: '7', generation: 2, labels: { 'murmur.io/capsule': 'c' } });
    expect(c.metadata.managedFields).toHaveLength(1);
    expect(c.metadata.annotations).toBeUndefined();
    expect(c.status).toEqual({
      observedGeneration: 2,
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 1,
      availableReplicas: 1,
      conditions: [{ type: 'Available', status: 'False' }],
    });
    expect(JSON.stringify(c).length).toBeLessThan(JSON.stringify(live).length);
  });
  it('gives the no-op check the same answer as the full object', () => {
    const c = cacheShape(live as any, 'capsule-operator') as any;
    expect(upToDate(c, want, 'capsule-operator')).toBe(upToDate(live, want, 'capsule-operator'));
    expect(upToDate(c, want, 'capsule-operator')).toBe(true);
    const changed = { ...want, spec: { ...want.spec, replicas: 3 } };
    expect(upToDate(c, changed, 'capsule-operator')).toBe(false);
  });
  it('keeps an object without an entry of ours whole', () => {
    const foreign = { ...live, metadata: { ...live.metadata, managedFields: [] } };
    expect((cacheShape(foreign as any, 'capsule-operator') as any).spec.progressDeadlineSeconds).toBe(600);
  });
  it('picks set items and indexed items', () => {
    expect(pickFields({ a: ['x', 'y', 'z'] }, { 'f:a': { 'v:"z"': {}, 'v:"x"': {} } })).toEqual({ a: ['x', 'z'] });
    expect(pickFields({ a: [{ p: 1 }, { p: 2 }] }, { 'f:a': { 'i:1': {} } })).toEqual({ a: [{ p: 2 }] });
  });
});
