/**
 * The chart's alerts (issue 41 §3) with a real promtool (Prometheus v0.316.0, built from the Go
 * module proxy by test/prometheus/build.sh): the PrometheusRule `helm template` renders passes
 * `promtool check rules`, and `promtool test rules` (alerts.promtest.yaml) fires each alert on
 * series that should fire it and not on series that should not.
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { BUILD_TIMEOUT_MS, ensurePrometheus } from '../support/build-on-use.ts';
import { CHART, PROMTOOL, ensureHelm, exec, renderChart, renderChartOn } from './chart-monitoring.ts';

beforeAll(() => ensurePrometheus(), BUILD_TIMEOUT_MS);
beforeAll(() => ensureHelm(), BUILD_TIMEOUT_MS);

const ALERTS = [
  'CapsuleSpendNearCeiling',
  'CapsuleSpendCeilingReached',
  'CapsuleTaskFailureRate',
  'CapsuleProviderErrors',
  'CapsuleTasksWaitingForInput',
  'CapsuleOperatorNoLeader',
  'CapsuleOperatorReconcileErrors',
  'CapsuleOperatorQueueBacklog',
];

/** The rendered PrometheusRule's spec as a Prometheus rule file, in a fresh directory. */
async function renderedRuleFile(): Promise<{ dir: string; spec: { groups: Array<{ name: string; rules: Array<{ alert: string }> }> } }> {
  const rule = (await renderChart('prometheusRule.enabled=true')).find((d) => d.kind === 'PrometheusRule');
  expect(rule, 'prometheusRule.enabled=true renders a PrometheusRule').toBeDefined();
  const dir = mkdtempSync(join(tmpdir(), 'capsule-rules-'));
  writeFileSync(join(dir, 'rules.yaml'), stringify(rule.spec));
  return { dir, spec: rule.spec };
}

describe("the chart's alerts under promtool", () => {
  it('the PrometheusRule is off by default, and when on it holds the rule file the chart ships, every alert in it', async () => {
    expect((await renderChart()).some((d) => d.kind === 'PrometheusRule')).toBe(false);
    const { spec } = await renderedRuleFile();
    expect(spec).toEqual(parse(readFileSync(join(CHART, 'rules', 'capsule-alerts.yaml'), 'utf8')));
    expect(spec.groups.flatMap((g) => g.rules.map((r) => r.alert))).toEqual(ALERTS);
    const plain = await renderChart('prometheusRule.enabled=true', 'prometheusRule.labels.release=kps');
    expect(plain.find((d) => d.kind === 'PrometheusRule').metadata.labels.release).toBe('kps');
  });

  it('is not rendered on a cluster without the Prometheus Operator API, like the ServiceMonitor', async () => {
    expect((await renderChartOn([], 'prometheusRule.enabled=true')).some((d) => d.kind === 'PrometheusRule')).toBe(false);
  });

  it('promtool check rules accepts the rendered rule groups', async () => {
    const { dir } = await renderedRuleFile();
    const r = await exec(PROMTOOL, ['check', 'rules', join(dir, 'rules.yaml')]);
    expect(r.out).toMatch(/SUCCESS: 8 rules found/);
    expect(r.code, r.out).toBe(0);
  });

  it('promtool test rules: each alert fires on the series meant to fire it and on no other', async () => {
    const { dir } = await renderedRuleFile();
    copyFileSync(join(import.meta.dirname, 'alerts.promtest.yaml'), join(dir, 'alerts.promtest.yaml'));
    const tested = parse(readFileSync(join(dir, 'alerts.promtest.yaml'), 'utf8')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const fired = new Set(tested.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    const silent = new Set(tested.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length === 0).map((a) => a.alertname)));
    // Every alert is tested firing; the silent cases are in the same groups as series that must not fire.
    expect([...fired].sort()).toEqual([...ALERTS].sort());
    expect(silent.size).toBeGreaterThan(0);
    const r = await exec(PROMTOOL, ['test', 'rules', 'alerts.promtest.yaml'], dir);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/SUCCESS/);
  });
});
