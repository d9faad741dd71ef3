import { describe, expect, it } from 'vitest';
import { covers } from '../../../operator/reconcile/compare.ts';

describe('covers (is the live object already what we apply?)', () => {
  it('ignores fields others add, not fields we set', () => {
    const want = { spec: { replicas: 1, template: { spec: { containers: [{ name: 'r', ports: [{ containerPort: 8080 }] }] } } } };
    const live = { metadata: { resourceVersion: '9' }, spec: { replicas: 1, progressDeadlineSeconds: 600, template: { spec: { containers: [{ name: 'r', ports: [{ containerPort: 8080, protocol: 'TCP' }], terminationMessagePath: '/x' }] } } } };
    expect(covers(live, want)).toBe(true);
    expect(covers({ ...live, spec: { ...live.spec, replicas: 3 } }, want)).toBe(false);
  });

  it('compares lists by length and order', () => {
    expect(covers({ a: [1, 2] }, { a: [1, 2] })).toBe(true);
    expect(covers({ a: [1, 2, 3] }, { a: [1, 2] })).toBe(false);
    expect(covers({ a: [2, 1] }, { a: [1, 2] })).toBe(false);
  });

  it('compares resource quantities by value', () => {
    expect(covers({ resources: { limits: { cpu: '1' } } }, { resources: { limits: { cpu: '1000m' } } })).toBe(true);
    expect(covers({ resources: { requests: { memory: '1Gi' } } }, { resources: { requests: { memory: '1024Mi' } } })).toBe(true);
    expect(covers({ resources: { requests: { memory: '1G' } } }, { resources: { requests: { memory: '1Gi' } } })).toBe(false);
    expect(covers({ port: '1' }, { port: '1000m' })).toBe(false);
  });
});
