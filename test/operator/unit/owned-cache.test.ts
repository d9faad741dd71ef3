/**
 * The owned-object cache entry (operator/reconcile/owned-cache.ts): the no-op check answers as
 * upToDate does on the whole live object; once it has, the entry keeps a digest instead of the
 * fields; a new version of the live object is judged afresh; a Deployment entry still carries what
 * the Capsule's status reads.
 */
import { describe, expect, it } from 'vitest';
import { upToDate } from '../../../operator/reconcile/compare.ts';
import { carryVerdict, entryUpToDate, ownedEntry } from '../../../operator/reconcile/owned-cache.ts';

const M = 'capsule-operator';
const fieldsV1 = {
  'f:metadata': { 'f:labels': { 'f:murmur.io/capsule': {} } },
  'f:spec': {
    'f:replicas': {},
    'f:template': {
      'f:metadata': { 'f:annotations': { 'f:murmur.io/config-hash': {} } },
      'f:spec': {
        'f:containers': {
          'k:{"name":"runtime"}': { '.': {}, 'f:name': {}, 'f:args': {}, 'f:env': { 'k:{"name":"HOME"}': { '.': {}, 'f:name': {}, 'f:value': {} } } },
        },
      },
    },
  },
};
const live = (rv: string, home = '/w') => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'c',
    namespace: 'ns',
    uid: 'u',
    resourceVersion: rv,
    generation: 2,
    labels: { 'murmur.io/capsule': 'c' },
    ownerReferences: [{ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', name: 'c', uid: 'cu', controller: true }],
    managedFields: [
      { manager: M, operation: 'Apply', fieldsV1 },
      { manager: 'kube-controller-manager', operation: 'Update', fieldsV1: { 'f:status': {} } },
    ],
  },
  spec: {
    replicas: 2,
    progressDeadlineSeconds: 600,
    template: {
      metadata: { annotations: { 'murmur.io/config-hash': 'h1' } },
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
              { name: 'HOME', value: home },
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
});
const want = (replicas = 2) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'c', namespace: 'ns', labels: { 'murmur.io/capsule': 'c' } },
  spec: {
    replicas,
    template: {
      metadata: { annotations: { 'murmur.io/config-hash': 'h1' } },
      spec: { containers: [{ name: 'runtime', args: ['serve'], env: [{ name: 'HOME', value: '/w' }] }] },
    },
  },
});

describe('the owned-object cache entry', () => {
  it('answers the no-op check as upToDate does on the whole live object', () => {
    for (const [l, w] of [
      [live('7'), want()],
      [live('7'), want(3)],
      [live('7', '/other'), want()],
    ] as const) {
      expect(entryUpToDate(ownedEntry(l, M), w, M)).toBe(upToDate(l, w, M));
    }
    expect(entryUpToDate(ownedEntry(live('7'), M), want(), M)).toBe(true);
  });

  it('keeps a digest instead of the fields once it has answered, and answers the same from it', () => {
    const e = ownedEntry(live('7'), M);
    const before = JSON.stringify(e).length;
    expect(entryUpToDate(e, want(), M)).toBe(true);
    expect(e.fields).toBeUndefined();
    expect(JSON.stringify(e).length).toBeLessThan(before / 2);
    // Same desired object: still up to date, without the fields.
    expect(entryUpToDate(e, want(), M)).toBe(true);
    // A changed desired object is not known to be up to date: it is applied.
    expect(entryUpToDate(e, want(3), M)).toBe(false);
  });

  it('an object that does not match keeps its fields (it is judged again after the write)', () => {
    const e = ownedEntry(live('7', '/other'), M);
    expect(entryUpToDate(e, want(), M)).toBe(false);
    expect(e.fields).toBeDefined();
    expect(e.verified).toBeUndefined();
  });

  it('the watch echo of the same version keeps the answer; a new version is judged afresh', () => {
    const judged = ownedEntry(live('7'), M);
    entryUpToDate(judged, want(), M);
    const echo = ownedEntry(live('7'), M);
    carryVerdict(echo, judged);
    expect(echo.verified).toBe(judged.verified);
    expect(echo.fields).toBeUndefined();
    const edited = ownedEntry(live('8', '/other'), M);
    carryVerdict(edited, judged);
    expect(edited.verified).toBeUndefined();
    expect(entryUpToDate(edited, want(), M)).toBe(false);
  });

  it('a Deployment entry carries what the Capsule status and prune read', () => {
    const e = ownedEntry(live('7'), M) as any;
    expect(e.metadata).toEqual({
      name: 'c',
      namespace: 'ns',
      uid: 'u',
      resourceVersion: '7',
      generation: 2,
      labels: { 'murmur.io/capsule': 'c' },
      ownerReferences: live('7').metadata.ownerReferences,
    });
    expect(e.spec).toEqual({ replicas: 2, template: { metadata: { annotations: { 'murmur.io/config-hash': 'h1' } } } });
    expect(e.status).toEqual({
      observedGeneration: 2,
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 1,
      availableReplicas: 1,
      conditions: [{ type: 'Available', status: 'False' }],
    });
    expect(ownedEntry({ ...live('7'), kind: 'Service', spec: { ports: [] } }, M)).not.toHaveProperty('spec');
  });
});
