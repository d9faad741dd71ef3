import { describe, expect, it } from 'vitest';
import type { Hook } from '../../../operator/api/types.ts';
import { computeHookStatus, HOOK_USED_BY_MAX, sameHookStatus } from '../../../operator/reconcile/hook-status.ts';

const hook = (spec: Partial<Hook['spec']> = {}, status?: Hook['status']): Hook => ({
  apiVersion: 'murmur.io/v1alpha1',
  kind: 'Hook',
  metadata: { name: 'h', namespace: 'team', generation: 3 },
  spec: { artifact: { name: 'h', version: '1.0.0' }, ...spec },
  ...(status ? { status } : {}),
});

describe('Hook status', () => {
  it('accepts a valid contract and lists its users sorted and deduplicated', () => {
    const s = computeHookStatus(hook({ binding: 'on-shell', commit_policy: 'deny' }), ['zeta', 'alpha', 'zeta'], 't0');
    expect(s.observedGeneration).toBe(3);
    expect(s.usedBy).toEqual(['alpha', 'zeta']);
    expect(s.usedByCount).toBe(2);
    expect(s.conditions).toEqual([
      {
        type: 'Accepted',
        status: 'True',
        reason: 'ContractValid',
        message: 'binding on-shell, blocking, commit_policy deny',
        observedGeneration: 3,
        lastTransitionTime: 't0',
      },
      { type: 'InUse', status: 'True', reason: 'Referenced', message: 'used by 2 Capsules: alpha, zeta', observedGeneration: 3, lastTransitionTime: 't0' },
    ]);
  });

  it('refuses a contract the commit table forbids with the staging message (a Hook stored before a stricter CRD)', () => {
    const s = computeHookStatus(hook({ binding: 'on-compaction', commit_policy: 'deny' }), [], 't0');
    expect(s.conditions![0]).toMatchObject({ type: 'Accepted', status: 'False', reason: 'InvalidContract' });
    expect(s.conditions![0]!.message).toBe(
      "spec.commit_policy: commit_policy 'deny' is not valid for binding 'on-compaction'; binding 'on-compaction' honors commit_policy 'replace-context'",
    );
    expect(s.conditions![1]).toMatchObject({
      type: 'InUse',
      status: 'False',
      reason: 'Unreferenced',
      message: "no Capsule in namespace 'team' lists this Hook in spec.hooks",
    });
  });

  it('keeps a condition’s transition time while its status holds, and moves it when the status flips', () => {
    const first = computeHookStatus(hook(), ['a'], 't0');
    const again = computeHookStatus(hook({}, first), ['a', 'b'], 't1');
    expect(again.conditions!.map((c) => c.lastTransitionTime)).toEqual(['t0', 't0']);
    const dropped = computeHookStatus(hook({}, again), [], 't2');
    expect(dropped.conditions!.map((c) => c.lastTransitionTime)).toEqual(['t0', 't2']);
    // Equal but for the times: not rewritten.
    expect(sameHookStatus(first, computeHookStatus(hook({}, first), ['a'], 't9'))).toBe(true);
    expect(sameHookStatus(first, again)).toBe(false);
  });

  it(`lists at most ${HOOK_USED_BY_MAX} users but counts them all`, () => {
    const names = Array.from({ length: HOOK_USED_BY_MAX + 7 }, (_, i) => `c${String(i).padStart(3, '0')}`);
    const s = computeHookStatus(hook(), names, 't0');
    expect(s.usedBy).toHaveLength(HOOK_USED_BY_MAX);
    expect(s.usedByCount).toBe(HOOK_USED_BY_MAX + 7);
    expect(s.conditions![1]!.message).toMatch(/ and 7 more$/);
  });
});
