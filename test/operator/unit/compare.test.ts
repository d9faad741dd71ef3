import { describe, expect, it } from 'vitest';
import { covers, ownsOnlyDesired, upToDate } from '../../../operator/reconcile/compare.ts';

describe('covers (is the live object already what we apply?)', () => {
  it('ignores fields others add, not fields we set', () => {
    const want = { spec: { replicas: 1, template: { spec: { containers: [{ name: 'r', ports: [{ containerPort: 8080 }] }] } } } };
    const live = {
      metadata: { resourceVersion: '9' },
      spec: {
        replicas: 1,
        progressDeadlineSeconds: 600,
        template: { spec: { containers: [{ name: 'r', ports: [{ containerPort: 8080, protocol: 'TCP' }], terminationMessagePath: '/x' }] } },
      },
    };
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

describe('keyed lists and owned fields (no write loop with fields owned by others)', () => {
  const want = {
    spec: {
      template: {
        spec: {
          containers: [
            {
              name: 'runtime',
              env: [
                { name: 'HOME', value: '/w' },
                { name: 'POD_NAME', value: 'x' },
              ],
            },
          ],
        },
      },
    },
  };
  it('an env var or a sidecar container added by someone else does not make the object stale', () => {
    const live = {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'runtime',
                env: [
                  { name: 'HOME', value: '/w' },
                  { name: 'DEBUG', value: '1' },
                  { name: 'POD_NAME', value: 'x' },
                ],
              },
              { name: 'sidecar', image: 'busybox' },
            ],
          },
        },
      },
    };
    expect(covers(live, want)).toBe(true);
  });
  it('a changed or missing item of ours does', () => {
    const changed = {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'runtime',
                env: [
                  { name: 'HOME', value: '/x' },
                  { name: 'POD_NAME', value: 'x' },
                ],
              },
            ],
          },
        },
      },
    };
    const missing = { spec: { template: { spec: { containers: [{ name: 'runtime', env: [{ name: 'HOME', value: '/w' }] }] } } } };
    expect(covers(changed, want)).toBe(false);
    expect(covers(missing, want)).toBe(false);
  });
  it('a field we own but no longer set makes the object stale; fields others own do not', () => {
    const fieldsV1 = {
      'f:spec': {
        'f:template': {
          'f:spec': {
            'f:containers': {
              'k:{"name":"runtime"}': {
                '.': {},
                'f:env': { 'k:{"name":"HOME"}': { '.': {}, 'f:value': {} }, 'k:{"name":"OTEL"}': { '.': {}, 'f:value': {} } },
              },
            },
          },
        },
      },
    };
    const live = { metadata: { managedFields: [{ manager: 'capsule-operator', operation: 'Apply', fieldsV1 }] }, ...structuredClone(want) };
    live.spec.template.spec.containers[0]!.env.push({ name: 'OTEL', value: 'http://c' });
    expect(ownsOnlyDesired(fieldsV1, want)).toBe(false);
    expect(upToDate(live, want, 'capsule-operator')).toBe(false);
    const othersOwn = { ...live, metadata: { managedFields: [{ manager: 'kubectl-edit', operation: 'Update', fieldsV1 }] } };
    expect(upToDate(othersOwn, want, 'capsule-operator')).toBe(true);
    const ours = {
      'f:spec': {
        'f:template': {
          'f:spec': { 'f:containers': { 'k:{"name":"runtime"}': { 'f:env': { 'k:{"name":"HOME"}': { 'f:value': {} }, 'k:{"name":"POD_NAME"}': {} } } } },
        },
      },
    };
    expect(ownsOnlyDesired(ours, want)).toBe(true);
  });
});
