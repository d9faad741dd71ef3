import { describe, expect, it } from 'vitest';
import type { Capsule } from '../../../operator/api/types.ts';
import { translate } from '../../../operator/translate/index.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';

const capsule = (spec: Capsule['spec']): Capsule => ({
  apiVersion: 'murmur.io/v1alpha1',
  kind: 'Capsule',
  metadata: { name: 'c', namespace: 'ns', uid: 'u1', generation: 1 },
  spec,
});
const run = (spec: Capsule['spec']) => translate({ capsule: capsule(spec), hooks: {}, secrets: {}, callers: [], capsulePorts: {}, options: defaultOptions() });
const manifestOf = (r: ReturnType<typeof run>) =>
  String((r.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['murmur.yaml']);
const AGENT = {
  artifacts: [{ name: 'd', version: '1.0.0', runtime: 'driver' as const }],
  inference: { driver: { artifact: 'd' }, model: 'm', endpoint: 'https://api.anthropic.com' },
};

describe('translate: servability', () => {
  it('an agent Capsule without inference.endpoint is blocked (MissingEndpoint, fatal) naming the field and the fix', () => {
    const r = run({ ...AGENT, inference: { driver: { artifact: 'd' }, model: 'm' } });
    expect(r.problems).toContainEqual(expect.objectContaining({ reason: 'MissingEndpoint', fatal: true, field: 'spec.inference.endpoint' }));
    expect(r.problems.find((p) => p.reason === 'MissingEndpoint')!.message).toMatch(/https:\/\/api\.anthropic\.com/);
    expect(run(AGENT).problems).toEqual([]);
  });

  it('a Capsule that says nothing serves tasks from a queue; single and none are NotServable warnings', () => {
    expect(manifestOf(run(AGENT))).toMatch(/lifecycle:\n\s+task_acceptance: queue/);
    const single = run({ ...AGENT, lifecycle: { task_acceptance: 'single' } });
    expect(manifestOf(single)).toMatch(/task_acceptance: single/);
    expect(single.problems).toEqual([expect.objectContaining({ reason: 'NotServable', fatal: false, field: 'spec.lifecycle.task_acceptance' })]);
    expect(single.problems[0]!.message).toContain('the pod exits and restarts with a fresh session');
    expect(run({ ...AGENT, lifecycle: { task_acceptance: 'none' } }).problems).toEqual([expect.objectContaining({ reason: 'NotServable', fatal: false })]);
  });
});

describe('translate: the OTLP headers Secret', () => {
  const withOtlp = (secrets: Record<string, { name: string; resourceVersion: string; keys: string[] } | undefined>) =>
    translate({
      capsule: capsule(AGENT),
      hooks: {},
      secrets,
      callers: [],
      capsulePorts: {},
      options: defaultOptions({ otlp: { endpoint: 'http://otel.observability.svc:4318', headersSecret: { name: 'otlp-headers', key: 'headers' } } }),
    });

  it('rotating it rolls the pods (its version is in the config hash)', () => {
    const a = withOtlp({ 'otlp-headers': { name: 'otlp-headers', resourceVersion: '10', keys: ['headers'] } });
    const b = withOtlp({ 'otlp-headers': { name: 'otlp-headers', resourceVersion: '11', keys: ['headers'] } });
    expect(a.problems).toEqual([]);
    expect(a.configHash).not.toBe(b.configHash);
  });

  it('a missing Secret or key is a warning (spans go out without the headers), not a silent success', () => {
    expect(withOtlp({}).problems).toEqual([expect.objectContaining({ reason: 'MissingSecret', fatal: false, field: 'otlp.headersSecret' })]);
    expect(withOtlp({ 'otlp-headers': { name: 'otlp-headers', resourceVersion: '1', keys: ['other'] } }).problems).toEqual([
      expect.objectContaining({ reason: 'MissingSecretKey', fatal: false }),
    ]);
  });
});

describe('translate: whatever admission lets through, the runtime validator on the rendered murmur.yaml refuses (InvalidManifest)', () => {
  const refused = (spec: Capsule['spec']) => run({ ...AGENT, ...spec }).problems.filter((p) => p.fatal);
  it.each([
    [
      'a wildcard host',
      { capabilities: { network: { allow: ['*'] } } },
      'spec.capabilities.network.allow[0]',
      /'\*'.*a wildcard is '\*\.' before a domain of at least two labels/,
    ],
    [
      'a wildcard over a top-level domain',
      { capabilities: { network: { allow: ['*.com'] } } },
      'spec.capabilities.network.allow[0]',
      /'\*\.com'.*a wildcard is '\*\.' before a domain/,
    ],
    ['user:pw@host', { capabilities: { network: { allow: ['user:pw@example.com'] } } }, 'spec.capabilities.network.allow[0]', /credentials/],
    ['a version with spaces', { version: '1 0' }, 'spec.version', /invalid version '1 0'.*E-MAN-007/],
    ['a bad spec.name', { name: 'Bad_Name' }, 'spec.name', /invalid name 'Bad_Name'.*E-MAN-007/],
    [
      'a bad strip_env glob',
      { capabilities: { shell: { allow: ['ls'], strip_env: ['AWS-*'] } } },
      'spec.capabilities.shell.strip_env[0]',
      /strip_env pattern 'AWS-\*'.*E-MAN-011/,
    ],
  ])('%s is Ready=False material, naming the field, with the runtime message', (_what, spec, field, message) => {
    const p = refused(spec as Capsule['spec']);
    expect(p.length).toBeGreaterThan(0);
    expect(p[0]!.field).toBe(field);
    expect(p[0]!.message).toMatch(message);
  });

  it('an artifact grant wider than the capsule grant is refused at the artifact index', () => {
    const p = refused({
      capabilities: { network: { allow: ['api.example.com'] } },
      artifacts: [...AGENT.artifacts, { name: 't', version: '1.0.0', capabilities: { network: { allow: ['other.example.com'] } } }],
    });
    expect(p).toEqual([expect.objectContaining({ reason: 'InvalidManifest', field: 'spec.artifacts[1].capabilities.network.allow[0]' })]);
    expect(p[0]!.message).toMatch(/widens the capsule grant.*E-MAN-016/);
  });

  it('a valid Capsule has no such problem', () => {
    expect(refused({ capabilities: { network: { allow: ['api.example.com', 'https://x.example.com:8443', '10.0.0.0/8'] } } })).toEqual([]);
  });
});
