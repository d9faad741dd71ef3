/**
 * The runtime validator's memo (operator/reconcile/refusals-memo.ts): it answers what the validator
 * answers, reruns it whenever the rendered murmur.yaml changes (so a Capsule made invalid again is
 * refused again), and skips it only for a file it has already judged for that Capsule.
 */
import { describe, expect, it } from 'vitest';
import type { Capsule } from '../../../operator/api/types.ts';
import { RefusalsMemo } from '../../../operator/reconcile/refusals-memo.ts';
import { translate } from '../../../operator/translate/index.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';

const AGENT = {
  artifacts: [{ name: 'd', version: '1.0.0', runtime: 'driver' as const }],
  inference: { driver: { artifact: 'd' }, model: 'm', endpoint: 'https://api.anthropic.com' },
};
const capsule = (spec: Capsule['spec'], name = 'c'): Capsule => ({
  apiVersion: 'murmur.io/v1alpha1',
  kind: 'Capsule',
  metadata: { name, namespace: 'ns', uid: 'u1', generation: 1 },
  spec,
});
const valid: Capsule['spec'] = { ...AGENT, capabilities: { network: { allow: ['api.example.com'] } } };
// Only the runtime's validator sees this one (translate's own checks pass it): a tool granted more than the capsule.
const invalid: Capsule['spec'] = {
  ...valid,
  artifacts: [...AGENT.artifacts, { name: 't', version: '1.0.0', capabilities: { network: { allow: ['other.example.com'] } } }],
};

describe('the runtime validator memo', () => {
  const memo = new RefusalsMemo();
  const run = (spec: Capsule['spec'], name = 'c') =>
    translate({
      capsule: capsule(spec, name),
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: {},
      options: defaultOptions(),
      refusals: (y, n) => memo.check(`ns/${name}`, y, n),
    });
  const refused = (spec: Capsule['spec'], name?: string) => run(spec, name).problems.filter((p) => p.reason === 'InvalidManifest');

  it('still reports InvalidManifest after a change that makes the manifest invalid again', () => {
    const first = refused(invalid);
    expect(first).toEqual([expect.objectContaining({ reason: 'InvalidManifest', fatal: true, field: 'spec.artifacts[1].capabilities.network.allow[0]' })]);
    expect(refused(valid)).toEqual([]);
    expect(refused(invalid)).toEqual(first);
    expect(refused(valid)).toEqual([]);
    expect(memo.runs).toBe(4);
  });

  it('answers an unchanged file from the memo, with what the validator answers', () => {
    const runs = memo.runs;
    const direct = translate({ capsule: capsule(valid), hooks: {}, secrets: {}, callers: [], capsulePorts: {}, options: defaultOptions() });
    for (let i = 0; i < 3; i++) expect(run(valid)).toEqual({ ...direct });
    expect(memo.runs).toBe(runs);
    const bad = refused(invalid);
    expect(memo.runs).toBe(runs + 1);
    expect(refused(invalid)).toEqual(bad);
    expect(memo.runs).toBe(runs + 1);
  });

  it('hands out copies: a caller that edits the problems does not change the next answer', () => {
    const a = refused(invalid);
    a[0]!.message = 'edited';
    a.push({ ...a[0]!, reason: 'WriteRefused' } as never);
    expect(refused(invalid)).toEqual([
      expect.objectContaining({ reason: 'InvalidManifest', message: expect.stringContaining('the runtime refuses the rendered murmur.yaml') }),
    ]);
  });

  it('keeps one entry per Capsule and none for one it was told is gone', () => {
    refused(valid, 'other');
    expect(memo.size).toBe(2);
    memo.forget('ns/other');
    expect(memo.size).toBe(1);
    const runs = memo.runs;
    refused(valid, 'other');
    expect(memo.runs).toBe(runs + 1);
  });
});
