import { describe, expect, it } from 'vitest';
import { ANNOTATION_CONFIG_HASH } from '../../../operator/translate/builders/common.ts';
import { computeStatus, runtimeExit, type PodLike } from '../../../operator/reconcile/status.ts';
import type { Capsule } from '../../../operator/api/types.ts';

const pod = (name: string, hash: string, cs: NonNullable<PodLike['status']>['containerStatuses']): PodLike => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns', annotations: { [ANNOTATION_CONFIG_HASH]: hash } },
  status: { containerStatuses: cs },
});
const refused = { exitCode: 1, reason: 'Error', message: 'E-MAN-000 murmur.yaml: artifacts[0]: driver-anthropic@9.9.9 not found' };

describe('runtimeExit: a runtime container that exited, from pod statuses', () => {
  const cases: Array<[string, PodLike[], string | undefined]> = [
    ['last termination non-zero, not ready', [pod('p1', 'h', [{ name: 'runtime', ready: false, restartCount: 2, lastState: { terminated: refused } }])], 'p1'],
    ['terminated now', [pod('p1', 'h', [{ name: 'runtime', ready: false, state: { terminated: refused } }])], 'p1'],
    ['ready again after a crash', [pod('p1', 'h', [{ name: 'runtime', ready: true, lastState: { terminated: refused } }])], undefined],
    ['exit code 0', [pod('p1', 'h', [{ name: 'runtime', ready: false, lastState: { terminated: { exitCode: 0 } } }])], undefined],
    ['a pod of an older configuration', [pod('p1', 'old', [{ name: 'runtime', ready: false, lastState: { terminated: refused } }])], undefined],
    ['another container', [pod('p1', 'h', [{ name: 'sidecar', ready: false, lastState: { terminated: refused } }])], undefined],
    ['no status yet', [pod('p1', 'h', undefined)], undefined],
  ];
  it.each(cases)('%s', (_name, pods, want) => {
    expect(runtimeExit(pods, 'h')?.pod).toBe(want);
  });

  it("turns into Ready=False / Degraded RuntimeExited carrying the runtime's message", () => {
    const c: Capsule = {
      apiVersion: 'murmur.io/v1alpha1',
      kind: 'Capsule',
      metadata: { name: 'a', namespace: 'ns', generation: 1 },
      spec: { version: '1.0.0' },
    } as Capsule;
    const exited = runtimeExit([pod('p1', 'h', [{ name: 'runtime', ready: false, lastState: { terminated: refused } }])], 'h');
    const s = computeStatus(c, { problems: [], a2aUrl: 'http://a', configHash: 'h' }, undefined, '2026-01-01T00:00:00Z', exited);
    const ready = s.conditions!.find((x) => x.type === 'Ready')!;
    const degraded = s.conditions!.find((x) => x.type === 'Degraded')!;
    expect([ready.status, ready.reason, degraded.status, degraded.reason]).toEqual(['False', 'RuntimeExited', 'True', 'RuntimeExited']);
    expect(ready.message).toContain('artifacts[0]');
  });
});
