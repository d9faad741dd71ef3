/**
 * Token usage in `kubectl get capsule` (operator/usage/):
 *  - the parser on real prom-client output, scraped from a real `bin/mur serve` after a scripted task;
 *  - the counting rule (growth, restarts, first sight, failover);
 *  - against the real API server: a Capsule whose pods' metrics address is injected to point at
 *    the real `mur serve` gets status.usage with exact totals; a scrape with nothing new writes
 *    nothing (resourceVersion unchanged); more tokens, a runtime restart (counters back to 0) and
 *    an operator failover all keep the total exact and monotonic; a pod that hangs or refuses is
 *    tolerated; `kubectl get capsule` shows the Tokens column; the chart grants what the scraper needs.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import type { Capsule, KubeObject } from '../../operator/api/types.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import type { Operator } from '../../operator/operator.ts';
import { podDelta } from '../../operator/usage/accumulate.ts';
import { parsePrometheusText, podTokens } from '../../operator/usage/prom.ts';
import { OperatorMetrics } from '../../operator/controller/metrics.ts';
import { translate } from '../../operator/translate/index.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { usageFromEnv } from '../../operator/usage/config.ts';
import { UsageScraper, type PodLike } from '../../operator/usage/scraper.ts';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { freePort, serve, type Served } from '../cli/serve-kit.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { parseExposition } from '../telemetry/prom-text.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, helm, kubeconfig, kubectl, newNamespace, operator, repoRoot } from './helpers.ts';

// ---- one real `mur serve` (restartable on the same metrics port) ---------------------------------

const metricsPort = await freePort();
let registry = '';
let served: Served | undefined;
let provider: ScriptedProvider | undefined;
const cleanup: Array<() => Promise<unknown>> = [];

/** (Re)start mur serve on `metricsPort`, its provider answering `turns` in order. */
async function startRuntime(turns: ScriptTurn[]): Promise<void> {
  await served?.stop();
  await provider?.stop();
  provider = await startScriptedProvider({ turns });
  const capsule = tmp('usage-capsule-');
  writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'metered', extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }));
  served = await serve(capsule, {
    registry,
    workRoot: tmp('usage-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--metrics-port', String(metricsPort)],
  });
}

async function task(text: string): Promise<void> {
  const done = await sendMessage({ peerUrl: served!.url, text, allow: [served!.url], wait: true });
  expect(done.ok && done.state, `${JSON.stringify(done)}\n${served!.output()}`).toBe('completed');
}

const metricsText = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

// Script: task 1 = two turns (tool call with cache tokens, then the answer), task 2 = one turn.
// Anthropic input = input_tokens + cache_read + cache_write (observability.md), so task 1 is
// (100 + 40 + 5) + 30 = 175 input, 10 + 7 = 17 output; task 2 is 200 / 20.
const FIRST_RUN: ScriptTurn[] = [
  { toolCalls: [{ name: 'echo', input: { text: 'a' } }], usage: { input: 100, output: 10, cacheRead: 40, cacheWrite: 5 } },
  { text: 'one', usage: { input: 30, output: 7 } },
  { text: 'two', usage: { input: 200, output: 20 } },
];

// A pod that accepts connections and never answers (timeouts must not hold anything up).
let hanging: Server;
const hangingSockets = new Set<Socket>();

beforeAll(async () => {
  registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  await startRuntime(FIRST_RUN);
  hanging = createServer((s) => {
    hangingSockets.add(s);
    s.on('close', () => hangingSockets.delete(s));
  });
  await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
}, 300_000);

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  await served?.stop();
  await provider?.stop();
  for (const s of hangingSockets) s.destroy();
  await new Promise<void>((r) => hanging?.close(() => r()));
});

// ---- the parser --------------------------------------------------------------------------------

describe('Prometheus text parser', () => {
  it('reads the real prom-client output of mur serve after a scripted task: exact token sums', async () => {
    await task('count me');
    const text = await metricsText();
    const samples = parsePrometheusText(text);
    // Same samples as the independent test parser, line for line.
    const ref = parseExposition(text).samples;
    expect(samples.length).toBe(ref.length);
    expect(samples.map((s) => [s.name, s.labels, Number.isNaN(s.value) ? 'NaN' : s.value])).toEqual(
      ref.map((s) => [s.name, s.labels, Number.isNaN(s.value) ? 'NaN' : s.value]),
    );
    // The counters as the runtime exports them; cache_* are subsets of input and not added again.
    const tok = samples.filter((s) => s.name === 'capsule_tokens_total');
    const by = (t: string) => tok.filter((s) => s.labels.token_type === t).reduce((a, s) => a + s.value, 0);
    expect([by('input'), by('output'), by('cache_read'), by('cache_write')]).toEqual([175, 17, 40, 5]);
    expect(tok.every((s) => s.labels.capsule === 'metered' && s.labels.source === 'provider')).toBe(true);
    const t = podTokens(samples);
    expect({ input: t.input, output: t.output }).toEqual({ input: 175, output: 17 });
    // process_start_time_seconds (prom-client's default metrics) identifies the process.
    expect(t.startTime).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(t.startTime).toBeLessThanOrEqual(Date.now() / 1000);
  });

  it('handles escapes, timestamps, special values; refuses malformed lines', () => {
    const s = parsePrometheusText(
      [
        '# HELP capsule_tokens_total Tokens, "quoted" \\ help',
        '# TYPE capsule_tokens_total counter',
        'capsule_tokens_total{capsule="a,b}c",model="m\\"x\\\\y\\nz",token_type="input"} 12 1700000000000',
        'capsule_tokens_total{token_type="output",} 3',
        'capsule_tokens_total{token_type="cache_read"} 9',
        'other_metric 1e3',
        'h_bucket{le="+Inf"} +Inf',
        'g NaN',
        'nodejs_eventloop_lag_mean_seconds Nan', // prom-client's spelling when there is no sample
        'h_bucket{le="-Inf"} -inf',
        '',
      ].join('\n'),
    );
    expect(s[0]).toEqual({ name: 'capsule_tokens_total', labels: { capsule: 'a,b}c', model: 'm"x\\y\nz', token_type: 'input' }, value: 12 });
    expect(s[3]!.value).toBe(1000);
    expect(s[4]!.value).toBe(Infinity);
    expect(Number.isNaN(s[5]!.value)).toBe(true);
    expect(Number.isNaN(s[6]!.value)).toBe(true);
    expect(s[7]!.value).toBe(-Infinity);
    expect(podTokens(s)).toEqual({ input: 12, output: 3 });
    for (const bad of ['x{a="b} 1', 'x{a=b} 1', 'x 1 2 3', 'x', '{a="b"} 1', 'x abc']) expect(() => parsePrometheusText(bad), bad).toThrow();
  });
});

// ---- the counting rule -------------------------------------------------------------------------

describe('counting rule (pod counters → monotonic total)', () => {
  const since = 1_000_000;
  it('adds growth, counts a restarted process from 0, never subtracts', () => {
    const prev = { input: 100, output: 10, startTime: 500 };
    expect(podDelta(prev, { input: 150, output: 12, startTime: 500 }, { sinceMs: since })).toEqual({ input: 50, output: 2, reason: 'growth' });
    expect(podDelta(prev, { input: 100, output: 10, startTime: 500 }, { sinceMs: since })).toEqual({ input: 0, output: 0, reason: 'growth' });
    // A drop in a counter = the process restarted: its new value is all new.
    expect(podDelta(prev, { input: 30, output: 3, startTime: 500 }, { sinceMs: since })).toEqual({ input: 30, output: 3, reason: 'restart' });
    expect(podDelta(prev, { input: 120, output: 9 }, { sinceMs: since })).toEqual({ input: 120, output: 9, reason: 'restart' });
    // A new process start time = restarted, even when its counters already passed the old values.
    expect(podDelta(prev, { input: 400, output: 40, startTime: 900 }, { sinceMs: since })).toEqual({ input: 400, output: 40, reason: 'restart' });
    // Without start times, growth is growth.
    expect(podDelta({ input: 1, output: 1 }, { input: 5, output: 2 }, { sinceMs: since })).toEqual({ input: 4, output: 1, reason: 'growth' });
  });

  it('first sight: counted in full, unless an earlier operator process already counted it', () => {
    const cur = { input: 70, output: 7, startTime: 600 };
    // No status.usage yet, or written by this process: the pod is new to the total.
    expect(podDelta(undefined, cur, { sinceMs: since })).toEqual({ input: 70, output: 7, reason: 'first' });
    expect(podDelta(undefined, cur, { observedAtMs: since + 5, sinceMs: since })).toEqual({ input: 70, output: 7, reason: 'first' });
    // Written before this process started, by a scrape after the pod's process started: baseline.
    expect(podDelta(undefined, cur, { observedAtMs: 700_000, sinceMs: since })).toEqual({ input: 0, output: 0, reason: 'baseline' });
    // ...but a pod process that started after that write has not been counted.
    expect(podDelta(undefined, { ...cur, startTime: 800 }, { observedAtMs: 700_000, sinceMs: since })).toEqual({ input: 70, output: 7, reason: 'first' });
    // Start times are whole seconds: one within a second of the write counts as after it.
    expect(podDelta(undefined, { ...cur, startTime: 700 }, { observedAtMs: 700_000, sinceMs: since }).reason).toBe('first');
    expect(podDelta(undefined, { ...cur, startTime: 699 }, { observedAtMs: 700_000, sinceMs: since }).reason).toBe('baseline');
    // Unknown start time: counted (never silently dropped).
    expect(podDelta(undefined, { input: 70, output: 7 }, { observedAtMs: 700_000, sinceMs: since }).reason).toBe('first');
  });

  it('a sequence with a restart keeps the total monotonic and exact', () => {
    const seen = [
      { input: 10, output: 1, startTime: 1 },
      { input: 25, output: 3, startTime: 1 },
      { input: 5, output: 1, startTime: 2 }, // restarted, used 5/1 since
      { input: 9, output: 2, startTime: 2 },
    ];
    let prev: { input: number; output: number; startTime?: number } | undefined;
    let total = 0;
    const totals: number[] = [];
    for (const s of seen) {
      const d = podDelta(prev, s, { sinceMs: since });
      total += d.input + d.output;
      totals.push(total);
      prev = s;
    }
    expect(totals).toEqual([11, 28, 34, 39]);
  });
});

// ---- against the real API server ---------------------------------------------------------------

describe.skipIf(!cluster.podsBecomeReady)('status.usage on a real API server', () => {
  let ns = '';
  let op: Operator | undefined;
  // Which pod goes where: the first pod seen → the real mur serve; any other → a pod that hangs.
  const podTarget = new Map<string, string>();
  const metricsUrl = (pod: PodLike) => {
    const uid = pod.metadata.uid!;
    if (!podTarget.has(uid))
      podTarget.set(
        uid,
        podTarget.size === 0 ? `http://127.0.0.1:${metricsPort}/metrics` : `http://127.0.0.1:${(hanging.address() as { port: number }).port}/metrics`,
      );
    return podTarget.get(uid);
  };
  const logs: string[] = [];
  const usageOperator = () =>
    operator([ns], { usage: { intervalMs: 700, timeoutMs: 400, concurrency: 2, metricsUrl }, log: (m) => logs.push(`${new Date().toISOString()} ${m}`) });
  const path = () => `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/metered`;
  const get = () => client.get<Capsule>(path());
  const usageOf = async () => (await get())?.status?.usage;
  const okScrapes = () => op!.metrics.total('capsule_operator_usage_scrapes_total', { result: 'ok' });
  const usageWrites = () => op!.metrics.total('capsule_operator_writes_total', { verb: 'usage' });
  const untilTotals = async (input: number, output: number) => {
    try {
      return await eventually(
        `status.usage ${input}/${output}`,
        async () => {
          const u = await usageOf();
          return u && u.inputTokens === input && u.outputTokens === output ? u : undefined;
        },
        40_000,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}; status.usage ${JSON.stringify(await usageOf())}, ok scrapes ${await okScrapes()}\n${logs.join('\n')}`);
    }
  };
  /** Waits for `n` more successful scrapes of the real pod. */
  const scrapes = async (n: number) => {
    const start = await okScrapes();
    await eventually(`${n} more scrapes`, async () => (await okScrapes()) >= start + n, 30_000);
  };

  beforeAll(async () => {
    await ensureCrds();
    ns = await newNamespace('op-usage');
    op = await usageOperator();
    await eventually('operator ready', () => op!.ready());
  });
  afterAll(async () => {
    await op?.stop();
    await deleteNamespace(ns);
    if (process.env.OPERATOR_TEST_LOG) console.error(logs.join('\n'));
  });

  it('a Capsule with ready pods gets status.usage with the exact totals; a hanging pod is tolerated', async () => {
    const r = await kubectl(
      ['apply', '-n', ns, '-f', '-'],
      "apiVersion: v1\nkind: Secret\nmetadata: { name: metered-store }\nstringData: { url: 'postgresql://murmur@10.20.0.5:5432/capsules' }\n---\napiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: metered }\nspec:\n  replicas: 2\n  store: { postgres: { urlSecretRef: { name: metered-store, key: url }, address: '10.20.0.5:5432' } }\n  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]\n  inference: { driver: { artifact: drv }, model: claude-test, endpoint: 'https://api.anthropic.com' }\n",
    );
    expect(r.code, r.stderr).toBe(0);
    await eventually('2 ready pods', async () => (await get())?.status?.readyReplicas === 2);
    const u = await untilTotals(175, 17);
    expect(u.totalTokens).toBe(192);
    expect(u.pods).toBe(1); // the hanging pod timed out; the round went on without it
    expect(Date.parse(u.observedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(podTarget.size).toBe(2);
    expect(await op!.metrics.total('capsule_operator_usage_scrapes_total', { result: 'error' })).toBeGreaterThan(0);
    expect(logs.filter((l) => l.includes('failed: ') && l.includes('usage: scraping pod')).length).toBe(1); // once per failure streak
    // Written by the operator's field manager, on the status subresource.
    const c = await get();
    const mf = (c!.metadata.managedFields as Array<{ manager: string; subresource?: string; fieldsV1?: unknown }>).filter(
      (m) => m.manager === 'capsule-operator' && m.subresource === 'status' && JSON.stringify(m.fieldsV1).includes('"f:usage"'),
    );
    expect(mf.length).toBe(1);
    // Reconcile's own status (conditions etc.) is intact next to it.
    expect(c!.status?.conditions?.find((x) => x.type === 'Ready')?.status).toBe('True');
  });

  it('scrapes that find nothing new write nothing (resourceVersion unchanged)', async () => {
    const before = await get();
    const writes = await usageWrites();
    const statusWrites = await op!.metrics.total('capsule_operator_writes_total', { verb: 'status' });
    await scrapes(3);
    const report = await op!.usage()!.scrapeOnce();
    expect(report).toMatchObject({ pods: 2, ok: 1, failed: 1, written: [] });
    const after = await get();
    expect(after!.metadata.resourceVersion).toBe(before!.metadata.resourceVersion);
    expect(await usageWrites()).toBe(writes);
    expect(await op!.metrics.total('capsule_operator_writes_total', { verb: 'status' })).toBe(statusWrites);
  });

  it('kubectl get capsule shows the Tokens column', async () => {
    const r = await kubectl(['get', 'capsule', 'metered', '-n', ns]);
    expect(r.code, r.stderr).toBe(0);
    const [head, row] = r.stdout.trim().split('\n') as [string, string];
    const cols = head.split(/\s{2,}/);
    expect(cols).toEqual(['NAME', 'STATE', 'READY', 'MODEL', 'REPLICAS', 'AVAILABLE', 'TOKENS', 'AGE']);
    // Read at the column's offset: a column without a value (STATE before the first phase) is blank.
    expect(row.slice(head.indexOf('TOKENS')).split(/\s+/)[0]).toBe('192');
  });

  it('more tokens → one write with the new totals; reconcile does not touch status.usage', async () => {
    const writes = await usageWrites();
    const reconciles = await op!.metrics.total('capsule_operator_reconcile_total');
    await task('again');
    const u = await untilTotals(375, 37);
    expect(u.totalTokens).toBe(412);
    await scrapes(2);
    expect(await usageWrites()).toBe(writes + 1);
    // A usage-only change of the Capsule does not even start a reconcile.
    expect(await op!.metrics.total('capsule_operator_reconcile_total')).toBe(reconciles);
    expect((await usageOf())?.totalTokens).toBe(412);
  });

  it('a runtime restart (counters back to 0) adds the new counts; the total never goes backwards', async () => {
    await startRuntime([
      { text: 'three', usage: { input: 50, output: 5 } },
      { text: 'four', usage: { input: 10, output: 1 } },
    ]);
    // Scraped at 0 first (a real pod needs seconds to become ready; the failover case below
    // relies on the process having started well before the write).
    await scrapes(2);
    await task('after restart');
    const text = await metricsText();
    expect(podTokens(parsePrometheusText(text)), text).toMatchObject({ input: 50, output: 5 });
    const u = await untilTotals(425, 42);
    expect(u.totalTokens).toBe(467);
    expect(logs.some((l) => l.includes('restarted its counters'))).toBe(true);
  });

  it('operator failover: the new leader does not count the pod again, then counts what is new', async () => {
    await op!.stop();
    const before = await get();
    op = await usageOperator();
    await eventually('new operator ready', () => op!.ready());
    await scrapes(2);
    const report = await op!.usage()!.scrapeOnce();
    expect(report.written).toEqual([]);
    expect((await get())!.metadata.resourceVersion).toBe(before!.metadata.resourceVersion);
    expect((await usageOf())?.totalTokens).toBe(467);
    await task('after failover');
    const u = await untilTotals(435, 43);
    expect(u.totalTokens).toBe(478);
  });

  it('a write that races another writer gets a real 409, re-reads and writes on the fresh object', async () => {
    const r = await kubectl(
      ['apply', '-n', ns, '-f', '-'],
      'apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: second }\nspec: { replicas: 1 }\n',
    );
    expect(r.code, r.stderr).toBe(0);
    const secondPath = `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/second`;
    await eventually('second ready', async () => (await client.get<Capsule>(secondPath))?.status?.readyReplicas === 1);
    // Just before its first status write, someone else changes the Capsule: the write's
    // resourceVersion is stale and the API server answers 409.
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const calls: string[] = [];
    class Racing extends KubeClient {
      override async mergePatchStatus<T extends KubeObject>(
        o: Capsule,
        status: unknown,
        opts: { fieldManager?: string; resourceVersion?: string } = {},
      ): Promise<T> {
        if (o.metadata.name === 'second' && !calls.length)
          await client.request('PATCH', secondPath, { body: { metadata: { labels: { raced: 'yes' } } }, contentType: 'application/merge-patch+json' });
        try {
          const out = await super.mergePatchStatus<T>(o, status, opts);
          calls.push('ok');
          return out;
        } catch (e) {
          calls.push(String((e as { status?: number }).status));
          throw e;
        }
      }
    }
    const racing = new Racing(kc);
    cleanup.push(async () => racing.close());
    const real = `http://127.0.0.1:${metricsPort}/metrics`;
    const s = new UsageScraper(racing, op!.controller()!.capsules, {
      intervalMs: 60_000,
      metricsUrl: () => real,
      namespaces: [ns],
      metrics: new OperatorMetrics(false),
      log: (m) => logs.push(m),
    });
    const report = await s.scrapeOnce();
    await s.stop();
    // 'metered' is not written (this scraper's first sight of its pods comes after the last write:
    // baseline); 'second' is new and gets the pod's counters (the restarted process: 60 / 6).
    expect(report.written, logs.join('\n')).toEqual([`${ns}/second`]);
    expect(calls).toEqual(['409', 'ok']);
    const second = await client.get<Capsule>(secondPath);
    expect(second!.metadata.labels?.raced).toBe('yes');
    expect(second!.status?.usage).toMatchObject({ inputTokens: 60, outputTokens: 6, totalTokens: 66, pods: 1 });
    expect((await usageOf())?.totalTokens).toBe(478);
  });

  it('stop() ends a round stuck on pods that never answer at once (leadership loss, SIGTERM)', async () => {
    const held = new Set<Socket>();
    const silent = createServer((sock) => held.add(sock));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanup.push(async () => {
      for (const x of held) x.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    });
    const dead = `http://127.0.0.1:${(silent.address() as { port: number }).port}/metrics`;
    const s = new UsageScraper(client, op!.controller()!.capsules, {
      intervalMs: 60_000,
      timeoutMs: 600_000,
      concurrency: 1,
      metricsUrl: () => dead,
      namespaces: [ns],
      metrics: new OperatorMetrics(false),
    });
    const round = s.scrapeOnce();
    await eventually('the round is waiting on a pod', () => held.size > 0);
    // The fetch would wait 10 minutes (far past the test timeout): only stop() can end the round.
    await s.stop();
    const report = await round;
    // The first pod was cut off by stop(), the others never tried: nothing counted, nothing written.
    expect(report).toMatchObject({ pods: 3, ok: 0, failed: 0, written: [] });
    expect(held.size).toBe(1);
  });
});

// ---- chart and configuration -------------------------------------------------------------------

describe('chart and configuration', () => {
  const chart = join(repoRoot, 'charts', 'capsule-operator');
  const render = async (...set: string[]) =>
    parseAllDocuments((await helm(['template', 'x', chart, '-n', 'ops', ...set.flatMap((x) => ['--set', x])])).stdout)
      .map((d) => d.toJS())
      .filter(Boolean) as any[];

  it('the chart grants pods list and watch (the scraper lists them, the runtime-exit check watches them), passes the settings, and restricted metrics ingress admits the operator pods', async () => {
    const docs = await render('usage.scrapeIntervalSeconds=30', 'network.metricsFromNamespaces={monitoring}');
    const cr = docs.find((d) => d.kind === 'Role' && d.metadata.name === 'x-capsule-operator');
    expect(cr.rules.filter((r: any) => r.resources.includes('pods')).flatMap((r: any) => r.verbs)).toEqual(['list', 'watch']);
    const dep = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'x-capsule-operator');
    const env: Record<string, string> = Object.fromEntries(
      dep.spec.template.spec.containers[0].env.filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value]),
    );
    expect(env).toMatchObject({ USAGE_SCRAPE_INTERVAL_SECONDS: '30', USAGE_SCRAPE_TIMEOUT_SECONDS: '5', USAGE_SCRAPE_CONCURRENCY: '8' });
    // POD_NAMESPACE comes from the downward API: the release namespace.
    const { usage, usageScraper } = usageFromEnv({ ...env, POD_NAMESPACE: 'ops' });
    expect(usage).toEqual({ intervalMs: 30_000, timeoutMs: 5000, concurrency: 8 });
    // The peer selects exactly the operator's pods: its selector labels are on the pod template.
    expect(usageScraper?.namespaceSelector).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': 'ops' } });
    expect(dep.spec.template.metadata.labels).toMatchObject(usageScraper!.podSelector!.matchLabels!);
    // A capsule's ingress policy then admits Prometheus' namespace and the operator on 9090.
    const capsule: Capsule = { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'c', namespace: 'team', uid: 'u' }, spec: {} };
    const options = defaultOptions({
      metricsFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      ...(usageScraper ? { usageScraper } : {}),
    });
    const policy = translate({ capsule, hooks: {}, secrets: {}, callers: [], capsulePorts: {}, options }).objects.find(
      (o) => o.metadata.name === 'c-ingress',
    ) as any;
    const metricsRule = policy.spec.ingress.find((r: any) => r.ports.some((p: any) => p.port === 9090));
    expect(metricsRule.from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }, usageScraper]);
    // Without metricsFrom the port stays open to any source (the operator included).
    const open = translate({
      capsule,
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: {},
      options: defaultOptions({ ...(usageScraper ? { usageScraper } : {}) }),
    }).objects.find((o) => o.metadata.name === 'c-ingress') as any;
    expect(open.spec.ingress.find((r: any) => r.ports.some((p: any) => p.port === 9090)).from).toBeUndefined();
  });

  it('0 turns scraping off; defaults are 60 s / 5 s / 8', () => {
    expect(usageFromEnv({ USAGE_SCRAPE_INTERVAL_SECONDS: '0', POD_NAMESPACE: 'ops' })).toEqual({});
    expect(usageFromEnv({}).usage).toEqual({ intervalMs: 60_000, timeoutMs: 5000, concurrency: 8 });
    expect(usageFromEnv({}).usageScraper).toBeUndefined();
  });
});
