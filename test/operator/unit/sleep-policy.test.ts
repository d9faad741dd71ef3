/**
 * sleepPolicy (operator/translate/sleep.ts): whether and after how long a Capsule sleeps, the
 * reason of its Sleeping condition, and the problems an explicit afterIdle raises; and what
 * translate does with it (the config hash, the activator).
 */
import { describe, expect, it } from 'vitest';
import type { Capsule, CapsuleSpec } from '../../../operator/api/types.ts';
import { effectiveSleep, formatDuration, parseDuration, sleepPolicy, translate } from '../../../operator/translate/index.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';

const capsule = (spec: CapsuleSpec): Capsule => ({
  apiVersion: 'murmur.io/v1alpha1',
  kind: 'Capsule',
  metadata: { name: 'c', namespace: 'ns', uid: 'u1' },
  spec,
});
const CLAIM: CapsuleSpec = { store: { embedded: { volumeClaim: {} } } };
const PG: CapsuleSpec = { store: { postgres: { urlSecretRef: { name: 's', key: 'url' }, address: 'pg:5432' } } };
const ACTIVATOR = { namespace: 'capsule-system', podLabels: { app: 'activator' }, port: 8012 };

describe('sleepPolicy: the default', () => {
  it('sleeps after 15m on a store that survives the pod (a claim, or postgres)', () => {
    expect(sleepPolicy(capsule(CLAIM))).toMatchObject({ afterIdleSeconds: 900, reason: 'Awake', problems: [] });
    expect(sleepPolicy(capsule(PG)).afterIdleSeconds).toBe(900);
  });

  it('never sleeps on the emptyDir store, saying why and how to enable it (no problem: nothing was asked)', () => {
    const p = sleepPolicy(capsule({}));
    expect(p).toMatchObject({ afterIdleSeconds: null, reason: 'StoreNotDurable', problems: [] });
    expect(p.message).toMatch(/spec\.store\.embedded\.volumeClaim.*spec\.store\.postgres/);
  });

  it('sleeps after 15m when the capsule takes API keys, as with any other auth (the activator checks them by digest)', () => {
    expect(sleepPolicy(capsule({ ...CLAIM, a2a: { auth: { apiKeys: { secretName: 'k' } } } }))).toMatchObject({
      afterIdleSeconds: 900,
      reason: 'Awake',
      problems: [],
    });
    expect(sleepPolicy(capsule({ a2a: { auth: { apiKeys: { secretName: 'k' } } } }))).toMatchObject({ afterIdleSeconds: null, reason: 'StoreNotDurable' });
  });
});

describe('sleepPolicy: an explicit afterIdle', () => {
  it('takes Go-style durations of at least 10s', () => {
    expect(sleepPolicy(capsule({ ...CLAIM, sleep: { afterIdle: '1h30m' } })).afterIdleSeconds).toBe(5400);
    expect(sleepPolicy(capsule({ ...PG, sleep: { afterIdle: '10s' } })).afterIdleSeconds).toBe(10);
  });

  it('never: always awake, on any store', () => {
    expect(sleepPolicy(capsule({ ...CLAIM, sleep: { afterIdle: 'never' } }))).toMatchObject({ afterIdleSeconds: null, reason: 'AlwaysAwake', problems: [] });
    expect(sleepPolicy(capsule({ sleep: { afterIdle: 'never' } })).problems).toEqual([]);
  });

  it.each(['soon', '15', '-1m', '1d', '9s', '9999ms', ''])('%j is InvalidSleep (E-OP-050) at spec.sleep.afterIdle, and stays awake', (v) => {
    const p = sleepPolicy(capsule({ ...CLAIM, sleep: { afterIdle: v } }));
    expect(p).toMatchObject({ afterIdleSeconds: null, reason: 'InvalidAfterIdle' });
    expect(p.problems).toEqual([expect.objectContaining({ reason: 'InvalidSleep', fatal: false, field: 'spec.sleep.afterIdle' })]);
    expect(p.problems[0]!.message).toContain(`'${v}'`);
  });

  it('on the emptyDir store is SleepNeedsDurableStore (E-OP-051), naming both fixes', () => {
    const p = sleepPolicy(capsule({ sleep: { afterIdle: '15m' } }));
    expect(p).toMatchObject({ afterIdleSeconds: null, reason: 'StoreNotDurable' });
    expect(p.problems).toEqual([expect.objectContaining({ reason: 'SleepNeedsDurableStore', fatal: false, field: 'spec.sleep.afterIdle' })]);
    expect(p.problems[0]!.message).toMatch(/spec\.store\.embedded\.volumeClaim.*spec\.store\.postgres/);
  });

  it('with apiKeys is taken as it is, without a problem', () => {
    const p = sleepPolicy(capsule({ ...PG, sleep: { afterIdle: '15m' }, a2a: { auth: { apiKeys: { secretName: 'k' } } } }));
    expect(p).toMatchObject({ afterIdleSeconds: 900, reason: 'Awake', problems: [] });
  });
});

describe('durations', () => {
  it('parses what Go parses (the units h m s ms us ns, fractions, sums)', () => {
    expect(parseDuration('15m')).toBe(900);
    expect(parseDuration('1.5h')).toBe(5400);
    expect(parseDuration('1m30s')).toBe(90);
    expect(parseDuration('10500ms')).toBeCloseTo(10.5);
    expect(parseDuration('15 m')).toBeUndefined();
  });

  it("formats as Go's Duration.String(), for Events and conditions", () => {
    expect([900, 30, 5400, 3600, 10.5].map(formatDuration)).toEqual(['15m0s', '30s', '1h30m0s', '1h0m0s', '10.5s']);
  });
});

describe('translate and sleep', () => {
  const run = (spec: CapsuleSpec, activator = true) =>
    translate({
      capsule: capsule(spec),
      hooks: {},
      secrets: { s: { name: 's', resourceVersion: '1', keys: ['url'] } },
      callers: [],
      capsulePorts: {},
      options: defaultOptions(activator ? { activator: ACTIVATOR } : {}),
      sleep: { phase: 'Sleeping', readyPods: 0, activatorIPs: ['10.0.0.1'] },
    });
  const replicas = (r: ReturnType<typeof run>) => (r.objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { replicas: number } }).spec.replicas;

  it('changing afterIdle does not roll the pods (not in the config hash)', () => {
    expect(run({ ...CLAIM, sleep: { afterIdle: '30s' } }).configHash).toBe(run({ ...CLAIM, sleep: { afterIdle: '2h' } }).configHash);
  });

  it('without an activator nothing sleeps: NoActivator, no EndpointSlice, replicas as the spec says', () => {
    const r = run(CLAIM, false);
    expect(r.sleep).toMatchObject({ afterIdleSeconds: null, reason: 'NoActivator' });
    expect(effectiveSleep(capsule(CLAIM), { activator: ACTIVATOR }).afterIdleSeconds).toBe(900);
    expect(r.objects.map((o) => o.kind)).not.toContain('EndpointSlice');
    expect(replicas(r)).toBe(1);
    expect(replicas(run(CLAIM))).toBe(0);
  });

  it('the activator slice is ready exactly while no capsule pod is', () => {
    const slice = (readyPods: number) =>
      translate({
        capsule: capsule(CLAIM),
        hooks: {},
        secrets: {},
        callers: [],
        capsulePorts: {},
        options: defaultOptions({ activator: ACTIVATOR }),
        sleep: { phase: readyPods ? 'Awake' : 'Waking', readyPods, activatorIPs: ['10.0.0.1'] },
      }).objects.find((o) => o.kind === 'EndpointSlice') as unknown as { endpoints: Array<{ conditions: { ready: boolean } }> };
    expect(slice(0).endpoints[0]!.conditions.ready).toBe(true);
    expect(slice(1).endpoints[0]!.conditions.ready).toBe(false);
  });
});

describe('a capsule that calls a peer, which may be asleep', () => {
  const egress = (activator: boolean) =>
    translate({
      capsule: capsule({ capabilities: { network: { allow: ['capsule://team-b/worker'] } } }),
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: { 'team-b/worker': 8080 },
      options: defaultOptions(activator ? { activator: ACTIVATOR } : {}),
    }).objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'c-egress') as unknown as {
      spec: { egress: Array<{ to: unknown[]; ports: unknown[] }> };
    };

  it("may reach the activator's pods on its port (a sleeping peer's Service sends the call there)", () => {
    const rules = egress(true).spec.egress;
    expect(rules).toContainEqual({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'capsule-system' } }, podSelector: { matchLabels: { app: 'activator' } } }],
      ports: [{ protocol: 'TCP', port: 8012 }],
    });
    expect(rules.filter((r) => JSON.stringify(r).includes('8012'))).toHaveLength(1);
  });

  it('gets no activator rule where the chart installed no activator', () => {
    expect(JSON.stringify(egress(false).spec.egress)).not.toContain('8012');
  });
});
