/**
 * The chart's monitoring objects as `helm template` renders them (the PrometheusRule's rule groups,
 * the dashboard ConfigMap's JSON), the dashboard's panel queries as Prometheus gets them from
 * Grafana, and promtool from the Prometheus build (test/prometheus/build.sh).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { existsSync } from 'node:fs';
import { clusterBinaries, ensureBinaries, helmPath, repoRoot } from '../cluster/harness.ts';
import { PROMETHEUS_BIN } from '../support/build-on-use.ts';

const run = promisify(execFile);
export const CHART = join(repoRoot, 'charts', 'capsule-operator');
export const PROMTOOL = join(PROMETHEUS_BIN, 'promtool');
export const PROMETHEUS = join(PROMETHEUS_BIN, 'prometheus');

/** Runs a command; resolves with its output and exit code (never rejects on a non-zero exit). */
export async function exec(cmd: string, args: string[], cwd?: string): Promise<{ code: number; out: string; stdout: string }> {
  try {
    const { stdout, stderr } = await run(cmd, args, { cwd, maxBuffer: 32 << 20 });
    return { code: 0, out: stdout + stderr, stdout };
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string; code?: number | string; message: string };
    return {
      code: typeof x.code === 'number' ? x.code : 127,
      out: `${x.stdout ?? ''}${x.stderr ?? ''}${typeof x.code === 'number' ? '' : x.message}`,
      stdout: x.stdout ?? '',
    };
  }
}

/**
 * helm built with the control plane (test/cluster/build.sh) when it is not there yet, so these
 * runtime-project tests run on a fresh clone without the operator suite's global setup.
 */
export async function ensureHelm(): Promise<void> {
  if (!existsSync(clusterBinaries().helm)) await ensureBinaries();
}

/** Every object `helm template` renders with these --set values (monitoring.coreos.com/v1 available). */
export function renderChart(...set: string[]): Promise<any[]> {
  return renderChartOn(['monitoring.coreos.com/v1'], ...set);
}

/** Every object `helm template` renders for a cluster serving these extra API versions. */
export async function renderChartOn(apiVersions: string[], ...set: string[]): Promise<any[]> {
  const r = await exec(helmPath(), [
    'template',
    'x',
    CHART,
    '-n',
    'ops',
    ...apiVersions.flatMap((v) => ['--api-versions', v]),
    ...set.flatMap((s) => ['--set', s]),
  ]);
  if (r.code !== 0) throw new Error(`helm template ${set.join(' ')} failed (exit ${r.code}): ${r.out}`);
  return parseAllDocuments(r.out)
    .map((d) => d.toJS())
    .filter(Boolean);
}

export interface Panel {
  title: string;
  targets: Array<{ expr: string; refId: string }>;
}

/** The dashboard JSON of the rendered grafana-dashboard ConfigMap. */
export async function renderedDashboard(): Promise<{ panels: Array<Panel & { type: string }>; templating: unknown }> {
  const cm = (await renderChart('dashboards.enabled=true')).find((d) => d.kind === 'ConfigMap' && d.metadata.name.endsWith('-dashboards'));
  if (!cm) throw new Error('the chart rendered no dashboard ConfigMap with dashboards.enabled=true');
  return JSON.parse(cm.data['capsules.json']);
}

/**
 * A panel query as Grafana sends it: its variables replaced. `$capsule` with All is `.*`;
 * `$__rate_interval` at least four scrape intervals; `$__range` the dashboard's time range.
 */
export function asSent(expr: string, o: { rateInterval: string; range: string }): string {
  return expr.replaceAll('$__rate_interval', o.rateInterval).replaceAll('$__range', o.range).replaceAll('$capsule', '.*');
}
