import { describe, expect, it } from 'vitest';
import { heapEnv, heapLimitMiB, MIN_HEAP_MIB } from '../../../operator/translate/builders/heap.ts';
import { buildDeployment, DEFAULT_RESOURCES } from '../../../operator/translate/builders/deployment.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';
import type { Capsule } from '../../../operator/api/types.ts';

describe('the runtime heap limit follows the pod memory limit', () => {
  it.each([
    ['1Gi', 512],
    ['2Gi', 1024],
    ['768Mi', 384],
    ['1G', 476], // decimal: 10^9 bytes / 2 / 2^20
    ['256Mi', 128],
    ['128Mi', MIN_HEAP_MIB],
    ['64Mi', MIN_HEAP_MIB],
    [String(512 * 1048576), 256],
    [undefined, undefined],
    ['lots', undefined],
    ['0', undefined],
  ] as const)('a memory limit of %s gives a heap of %s MiB', (limit, mib) => {
    expect(heapLimitMiB(limit)).toBe(mib);
  });

  it('renders NODE_OPTIONS only when the container has a memory limit', () => {
    expect(heapEnv({ limits: { memory: '1Gi' } })).toEqual([{ name: 'NODE_OPTIONS', value: '--max-old-space-size=512' }]);
    expect(heapEnv({ limits: { cpu: '1' } })).toEqual([]);
    expect(heapEnv(undefined)).toEqual([]);
  });

  const capsule = (resources?: Capsule['spec']['resources']): Capsule =>
    ({
      apiVersion: 'murmur.io/v1alpha1',
      kind: 'Capsule',
      metadata: { name: 'c', namespace: 'ns', uid: 'u1' },
      spec: { manifest: { name: 'c', version: '0.1.0' }, ...(resources ? { resources } : {}) },
    }) as unknown as Capsule;
  const runtimeEnv = (c: Capsule): { name: string; value?: string }[] =>
    (buildDeployment(c, defaultOptions(), 'h') as any).spec.template.spec.containers[0].env as { name: string; value?: string }[];

  it('a Capsule with no resources gets the default limit and the heap that goes with it', () => {
    expect(DEFAULT_RESOURCES.limits.memory).toBe('1Gi');
    expect(runtimeEnv(capsule()).find((e) => e.name === 'NODE_OPTIONS')?.value).toBe('--max-old-space-size=512');
  });

  it("a Capsule's own memory limit sizes the heap, and requests alone leave the image default", () => {
    expect(runtimeEnv(capsule({ limits: { memory: '3Gi' } })).find((e) => e.name === 'NODE_OPTIONS')?.value).toBe('--max-old-space-size=1536');
    expect(runtimeEnv(capsule({ requests: { memory: '256Mi' } })).some((e) => e.name === 'NODE_OPTIONS')).toBe(false);
  });
});
