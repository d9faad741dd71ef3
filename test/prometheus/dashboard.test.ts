/**
 * The chart's Grafana dashboard against a real Prometheus (issue 41 §3): a `mur serve` capsule with
 * a tool, a hook and a spend ceiling runs one task; Prometheus (test/prometheus/build.sh) scrapes
 * its /metrics on loopback; every panel query of the rendered dashboard, as Grafana sends it, is
 * valid PromQL, and every capsule panel's query returns series. This is the runtime-side stand-in
 * for the real-node scrape (test/realnode/prometheus.test.ts), which also checks the operator's
 * panels against a running operator.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { hookArtifact, hookCapsuleYaml, type HookDef } from '../hooks/hook-capsule.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { freePort, serve } from '../cli/serve-kit.ts';
import { BUILD_TIMEOUT_MS, ensurePrometheus } from '../support/build-on-use.ts';
import { asSent, renderedDashboard, type Panel } from './chart-monitoring.ts';
import { startPrometheus, type Prometheus } from './prometheus-server.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});
beforeAll(() => ensurePrometheus(), BUILD_TIMEOUT_MS);

const WATCH: HookDef = { name: 'watch', contract: 'binding: on-inference\n', script: {} };
// One scrape a second: $__rate_interval is at least four scrape intervals in Grafana.
const SENT = { rateInterval: '10s', range: '10m' };

let prometheus: Prometheus;
let panels: Panel[];
beforeAll(async () => {
  const provider = await startScriptedProvider({
    turns: [
      { toolCalls: [{ name: 'echo', input: { text: 'hi' } }], usage: { input: 120, output: 9 } },
      { text: 'done', usage: { input: 140, output: 4 } },
    ],
  });
  cleanup.push(() => provider.stop());
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL, hookArtifact(WATCH)]);
  const capsule = tmp('dashboarded-');
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    hookCapsuleYaml([WATCH], '  max_session_tokens: 1000000\nlifecycle:\n  task_acceptance: queue\n  queue_depth: 4', 'dashboarded'),
  );
  const metricsPort = await freePort();
  const served = await serve(capsule, {
    registry,
    workRoot: tmp('dashboarded-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--metrics-port', String(metricsPort)],
  });
  cleanup.push(() => served.stop());
  const done = await sendMessage({ peerUrl: served.url, text: 'echo hi', allow: [served.url], wait: true });
  expect(done.ok && done.state).toBe('completed');
  // The capsule job of the documented scrape configuration (docs/operator.md), with the pod found
  // by address instead of by the Kubernetes API, scraping every second.
  prometheus = await startPrometheus(
    `${[
      'global: {scrape_interval: 1s, evaluation_interval: 1s}',
      'scrape_configs:',
      '  - job_name: capsules',
      '    metrics_path: /metrics',
      `    static_configs: [{targets: ['127.0.0.1:${metricsPort}'], labels: {namespace: default, pod: dashboarded-0}}]`,
    ].join('\n')}\n`,
  );
  cleanup.push(() => prometheus.stop());
  // rate() needs two samples in its window; four scrapes leave room for a late one.
  await prometheus.scraped('capsules', 4);
  panels = (await renderedDashboard()).panels.filter((p) => p.type !== 'row');
}, 300_000);

const isOperatorPanel = (p: Panel): boolean => p.targets.every((t) => t.expr.includes('capsule_operator_'));

describe("the chart's dashboard on a real Prometheus scraping mur serve after one task", () => {
  it('has the panels the issue asks for', () => {
    const titles = panels.map((p) => p.title);
    for (const want of [
      /^Tokens per second/,
      /^Session spend/,
      /^Tasks per second/,
      /^Task latency/,
      /^Task failure/,
      /^Tasks waiting for input/,
      /^Provider call latency/,
      /^Provider errors/,
      /^Tool call latency/,
      /^Hook call latency/,
      /^Reconciles/,
      /queue depth/i,
    ]) {
      expect(
        titles.some((t) => want.test(t)),
        `a panel matching ${want}`,
      ).toBe(true);
    }
  });

  it("every panel query is valid PromQL, and every capsule panel's query returns series", async () => {
    const empty: string[] = [];
    for (const p of panels) {
      for (const t of p.targets) {
        const r = await prometheus.query(asSent(t.expr, SENT));
        expect(r.status, `${p.title} ${t.refId}: ${r.error ?? ''}`).toBe('success');
        if (!isOperatorPanel(p) && (r.data?.result.length ?? 0) === 0) empty.push(`${p.title} ${t.refId}: ${t.expr}`);
      }
    }
    expect(empty).toEqual([]);
    expect(panels.filter((p) => !isOperatorPanel(p)).length).toBeGreaterThanOrEqual(12);
  });

  it('the capsule variable lists the served capsule', async () => {
    const r = await prometheus.query('group by (capsule) (capsule_info)');
    expect(r.data?.result.map((s) => s.metric.capsule)).toEqual(['dashboarded']);
  });
});
