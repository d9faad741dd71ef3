/**
 * Sleeping Capsules, the controller's side (operator/controller/sleep.ts, operator/usage/idle.ts),
 * on the real API server: two real `mur serve` processes stand in for the pods' runtimes (kwok
 * pods have no process; the idle scraper's and card fetch's URLs are pointed at them), one idle,
 * one holding a task open on the scripted provider. The activator is an EndpointSlice of a Service
 * `act` made by hand (the activator itself is operator/activator/'s, tested apart).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { activatorFromEnv } from '../../operator/controller/activator-config.ts';
import type { Capsule, KubeObject } from '../../operator/api/types.ts';
import type { Operator } from '../../operator/operator.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { freePort, gate, serve, type Served } from '../cli/serve-kit.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, helm, kubectl, newNamespace, operator, repoRoot } from './helpers.ts';

interface Runtime {
  served: Served;
  provider: ScriptedProvider;
  metricsPort: number;
}
const runtimes: Record<string, Runtime> = {};
const held = gate();

/** A real mur serve for Capsule `name` (its pods' runtime), its provider answering `turns`. */
async function runtime(registry: string, name: string, hold?: () => Promise<unknown>): Promise<Runtime> {
  const provider = await startScriptedProvider({ turns: [{ text: 'done', ...(hold ? { hold } : {}) }], onExhausted: 'repeat-last' });
  const dir = tmp(`sleep-${name}-`);
  writeFileSync(join(dir, 'murmur.yaml'), capsuleYaml({ name, extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }));
  const metricsPort = await freePort();
  const served = await serve(dir, {
    registry,
    workRoot: tmp(`sleep-${name}-work-`),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--metrics-port', String(metricsPort)],
  });
  return { served, provider, metricsPort };
}

beforeAll(async () => {
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  runtimes.sleepy = await runtime(registry, 'sleepy');
  runtimes.busy = await runtime(registry, 'busy', held.hold);
  // The busy runtime's task stays `working` (its provider call is held) until the end.
  const r = runtimes.busy!;
  const sent = await sendMessage({ peerUrl: r.served.url, text: 'take your time', allow: [r.served.url], wait: false });
  expect(sent.ok, JSON.stringify(sent)).toBe(true);
  await held.arrival;
}, 300_000);

afterAll(async () => {
  held.open();
  for (const r of Object.values(runtimes)) {
    await r.served.stop();
    await r.provider.stop();
  }
});

const capsuleYamlFor = (name: string, extra = '') =>
  `apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: ${name} }\nspec:\n  replicas: 1\n  sleep: { afterIdle: 10s }\n` +
  `  store: { postgres: { urlSecretRef: { name: store, key: url }, address: '10.20.0.5:5432' } }\n` +
  `  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]\n` +
  `  inference: { driver: { artifact: drv }, model: claude-test, endpoint: 'https://api.anthropic.com' }\n${extra}`;

describe.skipIf(!cluster.podsBecomeReady)('sleeping Capsules on a real API server', () => {
  let ns = '';
  let op: Operator | undefined;
  /** Every object write of the operator, in order (beforeWrite): what it wrote and when. */
  const writes: string[] = [];
  /** Every status the Capsules went through (the operator's own watch). */
  const seen: Record<string, Capsule['status'][]> = {};
  const runtimeOf = (pod: KubeObject) => runtimes[pod.metadata.labels?.['murmur.io/capsule'] ?? ''];
  const capsulePath = (name: string) => `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/${name}`;
  const get = (name: string) => client.get<Capsule>(capsulePath(name));
  const deployment = (name: string) => client.get<KubeObject & { spec: { replicas: number } }>(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
  const slice = (name: string) => client.get<any>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/${name}-activator`);
  const events = async (name: string, reason: string) =>
    (await client.list<any>(`/api/v1/namespaces/${ns}/events`, { fieldSelector: `involvedObject.name=${name},reason=${reason}` })).items;
  const activatorSlice = (ips: string[]) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'act-1', namespace: ns, labels: { 'kubernetes.io/service-name': 'act', 'endpointslice.kubernetes.io/managed-by': 'test' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8012, protocol: 'TCP' }],
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  });
  const wakeRequest = async (c: Capsule, at: Date) =>
    client.create({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: '', generateName: `${c.metadata.name}.`, namespace: ns },
      involvedObject: { apiVersion: c.apiVersion, kind: 'Capsule', name: c.metadata.name, namespace: ns, uid: c.metadata.uid },
      reason: 'WakeRequested',
      message: 'a JSON-RPC request is waiting for the capsule to wake',
      type: 'Normal',
      source: { component: 'capsule-activator' },
      firstTimestamp: at.toISOString(),
      lastTimestamp: at.toISOString(),
      count: 1,
    });
  const histogramCount = async (name: string) =>
    ((await op!.metrics.registry.getSingleMetric(name)?.get())?.values ?? []).find((v) => (v as { metricName?: string }).metricName === `${name}_count`)
      ?.value ?? 0;

  beforeAll(async () => {
    await ensureCrds();
    ns = await newNamespace('op-sleep');
    await client.create(activatorSlice(['10.9.9.9']));
    const r = await kubectl(['create', 'secret', 'generic', 'store', '-n', ns, '--from-literal=url=postgresql://m@10.20.0.5:5432/c']);
    expect(r.code, r.stderr).toBe(0);
    op = await operator([ns], {
      translate: defaultOptions({ activator: { namespace: ns, podLabels: { app: 'act' }, port: 8012 } }),
      activatorService: { namespace: ns, name: 'act' },
      idle: {
        timeoutMs: 2000,
        tickMs: 200,
        metricsUrl: (pod) => (runtimeOf(pod) ? `http://127.0.0.1:${runtimeOf(pod)!.metricsPort}/metrics` : undefined),
        cardUrl: (pod) => (runtimeOf(pod) ? new URL('/.well-known/agent-card.json', runtimeOf(pod)!.served.url).href : undefined),
      },
      beforeWrite: (o) => {
        const x = o as any;
        if (x.kind === 'EndpointSlice') writes.push(`slice ${x.metadata.name} ready=${x.endpoints?.[0]?.conditions?.ready}`);
        if (x.kind === 'Deployment') writes.push(`deployment ${x.metadata.name} replicas=${x.spec.replicas}`);
      },
    });
    await eventually('operator ready', () => op!.ready());
    op.controller()!.capsules.on((_t, c) => (seen[c.metadata.name] ??= []).push(c.status));
  });
  afterAll(async () => {
    await op?.stop();
    await deleteNamespace(ns);
  });

  it('an idle Capsule sleeps: card in status, phase Sleeping, the activator slice ready before replicas go to 0; a busy one never sleeps', async () => {
    const r = await kubectl(['apply', '-n', ns, '-f', '-'], `${capsuleYamlFor('sleepy')}---\n${capsuleYamlFor('busy')}`);
    expect(r.code, r.stderr).toBe(0);
    // The move is written first (phase, card), the conditions by the same reconcile right after.
    const asleep = await eventually(
      'sleepy Sleeping',
      async () => {
        const c = await get('sleepy');
        return c?.status?.phase === 'Sleeping' && c.status.conditions?.some((x) => x.type === 'Sleeping' && x.status === 'True') ? c : undefined;
      },
      90_000,
    );
    // The card, as the runtime serves it.
    const card = JSON.parse(asleep!.status!.sleep!.agentCard!);
    expect(card.name).toBe('sleepy');
    expect(Date.parse(asleep!.status!.sleep!.since!)).toBeGreaterThan(Date.now() - 120_000);
    expect(asleep!.status!.conditions!.find((c) => c.type === 'Sleeping')).toMatchObject({ status: 'True', reason: 'Idle' });
    expect(asleep!.status!.conditions!.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Sleeping' });
    expect(asleep!.spec.replicas).toBe(1); // never written by sleep
    expect((await events('sleepy', 'Sleeping'))[0]?.message).toMatch(/^idle for \d+s$/);
    expect(await op!.metrics.total('capsule_operator_sleeps_total')).toBe(1);
    await eventually('sleepy replicas 0', async () => (await deployment('sleepy'))?.spec.replicas === 0);
    const s = await slice('sleepy');
    expect(s.metadata.labels).toMatchObject({
      'kubernetes.io/service-name': 'sleepy',
      'endpointslice.kubernetes.io/managed-by': 'capsule-operator.murmur.dev',
    });
    expect(s.endpoints).toEqual([{ addresses: ['10.9.9.9'], conditions: { ready: true } }]);
    // Order: the slice was made ready before (or in) the write that took the replicas to 0.
    const ready = writes.indexOf('slice sleepy-activator ready=true');
    expect(ready, writes.join('\n')).toBeGreaterThanOrEqual(0);
    expect(ready).toBeLessThan(writes.indexOf('deployment sleepy replicas=0'));
    // The busy capsule, past afterIdle just as long, with its readings at 0: awake.
    const podsBusy = op!.controller()!.sleep.readyPods(`${ns}/busy`);
    await eventually('busy read as busy', () => op!.idle()!.readings(`${ns}/busy`, podsBusy)[0]?.idleSeconds === 0);
    const busy = await get('busy');
    expect(busy?.status?.phase).toBe('Ready');
    expect((await deployment('busy'))?.spec.replicas).toBe(1);
    expect(busy!.status!.conditions!.find((c) => c.type === 'Sleeping')).toMatchObject({ status: 'False', reason: 'Awake' });
    expect((await slice('busy')).endpoints).toEqual([{ addresses: ['10.9.9.9'], conditions: { ready: false } }]);
    const out = await kubectl(['get', 'capsules', '-n', ns]);
    expect(out.stdout).toMatch(/sleepy\s+Sleeping/);
    expect(out.stdout).toMatch(/busy\s+Ready/);
  }, 120_000);

  it('a WakeRequested Event from before the capsule slept does not wake it', async () => {
    const c = (await get('sleepy'))!;
    const reconciled = new Promise<void>((r) => op!.controller()!.events.on('reconciled', (k: string) => k === `${ns}/sleepy` && r()));
    await wakeRequest(c, new Date(Date.parse(c.status!.sleep!.since!) - 3_600_000));
    await reconciled;
    expect((await get('sleepy'))?.status?.phase).toBe('Sleeping');
    expect((await deployment('sleepy'))?.spec.replicas).toBe(0);
  });

  it('the activator slice follows the activator Service’s endpoints', async () => {
    const live = await client.get<KubeObject>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/act-1`);
    await client.replace({
      ...activatorSlice(['10.9.9.7', '10.9.9.8']),
      metadata: { ...activatorSlice([]).metadata, resourceVersion: live!.metadata.resourceVersion },
    });
    await eventually('slices follow', async () => (await slice('sleepy'))?.endpoints?.length === 2 && (await slice('busy'))?.endpoints?.length === 2);
    expect((await slice('sleepy')).endpoints.map((e: any) => [e.addresses[0], e.conditions.ready])).toEqual([
      ['10.9.9.7', true],
      ['10.9.9.8', true],
    ]);
    expect((await slice('busy')).endpoints.every((e: any) => e.conditions.ready === false)).toBe(true);
  });

  it('a WakeRequested Event wakes it: phase Waking and replicas back, then Ready with lastWake, the wake counted', async () => {
    const c = (await get('sleepy'))!;
    const asked = new Date();
    await wakeRequest(c, asked);
    await eventually('a Waking Event', async () => (await events('sleepy', 'Waking')).length === 1);
    await eventually('sleepy Ready', () => seen.sleepy?.some((s) => s?.phase === 'Ready' && s.sleep?.lastWake));
    // Its (long idle) runtime may put it back to sleep right after: read the moves in order.
    const phases = seen.sleepy!.map((s) => s?.phase).filter((p, i, a) => p !== a[i - 1]);
    const w = phases.indexOf('Waking');
    expect(phases.slice(w - 1, w + 2)).toEqual(['Sleeping', 'Waking', 'Ready']);
    expect(writes).toContain('deployment sleepy replicas=1');
    const woke = seen.sleepy!.find((s) => s?.phase === 'Ready' && s.sleep?.lastWake)!;
    // lastWake is when the request was made (Event times are whole seconds); since and the card are gone.
    expect(Math.abs(Date.parse(woke.sleep!.lastWake!) - asked.getTime())).toBeLessThan(1000);
    expect(woke.sleep?.since).toBeUndefined();
    expect(woke.sleep?.agentCard).toBeUndefined();
    // Counted once the status write has answered (its watch event may come first).
    await eventually('the wake counted', async () => (await op!.metrics.total('capsule_operator_wakes_total')) === 1);
    expect(await histogramCount('capsule_operator_wake_seconds')).toBe(1);
    const text = await op!.metrics.registry.metrics();
    expect(text).toMatch(/^capsule_operator_wake_seconds_bucket\{le="\+Inf"\} 1$/m);
  });

  it('a WakeRequested Event stamped ahead of the operator’s clock wakes the capsule once, not again each time it falls back asleep', async () => {
    // Event times are whole seconds and come from the activator's node's clock; an Event that still
    // passes the `since` floor after the capsule went back to sleep must not wake it a second time.
    await eventually('sleepy Sleeping', async () => (await get('sleepy'))?.status?.phase === 'Sleeping');
    const c = (await get('sleepy'))!;
    const wakings = (await events('sleepy', 'Waking')).length;
    const from = seen.sleepy!.length;
    await wakeRequest(c, new Date(Date.now() + 20_000));
    await eventually('a Waking Event', async () => (await events('sleepy', 'Waking')).length === wakings + 1);
    // Its runtime reports long idle: it goes back to sleep right after it is Ready.
    await eventually('sleepy woken and asleep again', () => {
      const phases = seen.sleepy!.slice(from).map((s) => s?.phase);
      return phases.includes('Ready') && phases.lastIndexOf('Sleeping') > phases.indexOf('Ready');
    });
    // A later reconcile (one an annotation written by hand starts) leaves it asleep.
    const reconciled = new Promise<void>((r) => op!.controller()!.events.on('reconciled', (k: string) => k === `${ns}/sleepy` && r()));
    await client.request('PATCH', capsulePath('sleepy'), {
      body: { metadata: { annotations: { 'example.com/poked': String(Date.now()) } } },
      contentType: 'application/merge-patch+json',
    });
    await reconciled;
    expect((await get('sleepy'))?.status?.phase).toBe('Sleeping');
    expect((await events('sleepy', 'Waking')).length).toBe(wakings + 1);
  });

  it('/scale writes still change spec.replicas and the Deployment of an awake sleep-enabled Capsule', async () => {
    // As `kubectl scale` and an HPA write it: the /scale subresource.
    const scale = (replicas: number) =>
      client.request('PATCH', `${capsulePath('busy')}/scale`, { body: { spec: { replicas } }, contentType: 'application/merge-patch+json' });
    await scale(2);
    expect((await get('busy'))?.spec.replicas).toBe(2);
    await eventually('busy Deployment at 2', async () => (await deployment('busy'))?.spec.replicas === 2);
    await scale(1);
    await eventually('busy Deployment at 1', async () => (await deployment('busy'))?.spec.replicas === 1);
    expect((await get('busy'))?.status?.phase).not.toBe('Sleeping');
  });
});

describe('the chart, for sleeping Capsules', () => {
  const render = async (...set: string[]) =>
    parseAllDocuments((await helm(['template', 'x', join(repoRoot, 'charts', 'capsule-operator'), '-n', 'ops', ...set.flatMap((x) => ['--set', x])])).stdout)
      .map((d) => d.toJS())
      .filter(Boolean) as any[];
  const envOf = (docs: any[]) =>
    Object.fromEntries(
      docs
        .find((d) => d.kind === 'Deployment' && d.metadata.name === 'x-capsule-operator')
        .spec.template.spec.containers[0].env.filter((e: any) => 'value' in e)
        .map((e: any) => [e.name, e.value]),
    ) as Record<string, string>;
  const capsuleEgressPorts = (docs: any[]) =>
    docs
      .find((d) => d.kind === 'NetworkPolicy' && d.metadata.name === 'x-capsule-operator')
      .spec.egress.filter((r: any) => r.to?.some((p: any) => p.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'capsule'))
      .flatMap((r: any) => r.ports.map((p: any) => p.port));

  it('grants the operator the slices, claims and wake Events, tells it where the activator is, and lets it reach the pods', async () => {
    const docs = await render('usage.scrapeIntervalSeconds=0');
    const role = docs.find((d) => d.kind === 'Role' && d.metadata.name === 'x-capsule-operator' && d.metadata.namespace === 'default');
    const verbs = (group: string, res: string) =>
      role.rules.filter((r: any) => r.apiGroups.includes(group) && r.resources.includes(res)).flatMap((r: any) => r.verbs);
    const all = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
    expect(verbs('discovery.k8s.io', 'endpointslices')).toEqual(all);
    expect(verbs('', 'persistentvolumeclaims')).toEqual(all);
    expect(verbs('', 'events')).toEqual(['create', 'patch', 'list', 'watch']);
    // The activator's own Service's slices, in the release namespace: read only.
    const act = docs.find((d) => d.kind === 'Role' && d.metadata.name === 'x-capsule-operator-activator-endpoints');
    expect(act.metadata.namespace).toBe('ops');
    expect(act.rules).toEqual([{ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] }]);
    expect(docs.find((d) => d.kind === 'RoleBinding' && d.metadata.name === 'x-capsule-operator-activator-endpoints').subjects[0].name).toBe(
      'x-capsule-operator',
    );
    // The environment parses (main.ts would exit on a bad value) into the chart's activator.
    expect(activatorFromEnv({ ...envOf(docs), POD_NAMESPACE: 'ops' })).toEqual({
      activator: { namespace: 'ops', port: 8012, podLabels: { 'app.kubernetes.io/name': 'capsule-activator', 'app.kubernetes.io/instance': 'x' } },
      service: { namespace: 'ops', name: 'x-activator' },
    });
    // Egress to the capsule pods: metrics (idle readings) and a2a (the card), usage scraping off.
    expect(capsuleEgressPorts(docs)).toEqual([9090, 8080]);
  });

  it('activator.enabled=false: no activator settings, no activator role, no a2a egress', async () => {
    const docs = await render('activator.enabled=false');
    expect(Object.keys(envOf(docs)).filter((k) => k.startsWith('CAPSULE_ACTIVATOR_'))).toEqual([]);
    expect(activatorFromEnv(envOf(docs))).toBeUndefined();
    expect(docs.some((d) => d.metadata.name === 'x-capsule-operator-activator-endpoints')).toBe(false);
    expect(capsuleEgressPorts(docs)).toEqual([9090]);
    expect(capsuleEgressPorts(await render('activator.enabled=false', 'usage.scrapeIntervalSeconds=0'))).toEqual([]);
  });
});
