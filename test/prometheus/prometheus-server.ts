/**
 * A real Prometheus (test/prometheus/build.sh) on 127.0.0.1 with a given scrape configuration, its
 * TSDB in a temporary directory, and its HTTP query API. Started once its log says it is ready;
 * `scraped(job, n)` waits until each of the job's targets has been scraped successfully n times
 * (Prometheus's own `up` series, polled through the API: a scrape has no other outside event).
 * With `netns` it runs
 * inside that network namespace (the real node's, to reach pod IPs and the API server there) on
 * its loopback, and is queried with `promtool query instant` in the same namespace.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROMETHEUS, PROMTOOL, exec } from './chart-monitoring.ts';
import { freePort } from '../cli/serve-kit.ts';

export interface QueryResult {
  status: string;
  error?: string;
  data?: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

export interface Prometheus {
  url: string;
  query(expr: string): Promise<QueryResult>;
  scraped(job: string, times: number, timeoutMs?: number): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** A network namespace (ip netns name) to run in; its port is then `port`. */
  netns?: string;
  port?: number;
  /** Where its config and TSDB go (default: a new temporary directory). */
  parent?: string;
}

export async function startPrometheus(config: string, o: PrometheusOptions = {}): Promise<Prometheus> {
  const dir = mkdtempSync(join(o.parent ?? tmpdir(), 'prometheus-'));
  writeFileSync(join(dir, 'prometheus.yml'), config);
  const port = o.port ?? (await freePort());
  const inNs = (cmd: string, args: string[]): [string, string[]] => (o.netns ? ['nsenter', [`--net=/run/netns/${o.netns}`, '--', cmd, ...args]] : [cmd, args]);
  // nsenter without --fork execs the command: the child's pid is Prometheus's own.
  const proc = spawn(
    ...inNs(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`]),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (/Server is ready to receive web requests/.test(out)) resolve();
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('error', reject);
    void exited.then(() => reject(new Error(`prometheus exited before it was ready:\n${out}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const query = async (expr: string): Promise<QueryResult> => {
    if (!o.netns) return (await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`)).json() as Promise<QueryResult>;
    const r = await exec(...inNs(PROMTOOL, ['query', 'instant', '-o', 'json', url, expr]));
    return r.code === 0 ? { status: 'success', data: { resultType: 'vector', result: JSON.parse(r.stdout) } } : { status: 'error', error: r.out };
  };
  return {
    url,
    query,
    output: () => out,
    async scraped(job, times, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // up is 1 for each successful scrape: its sum is their count (the least-scraped target's).
        const r = await query(`min(sum_over_time(up{job="${job}"}[10m]))`);
        const n = Number(r.data?.result[0]?.value[1] ?? 0);
        if (n >= times) return;
        if (Date.now() > deadline) throw new Error(`prometheus scraped job ${job} ${n} times, not ${times}, in ${timeoutMs} ms:\n${out}`);
        await new Promise((r) => setTimeout(r, 250)); // polling interval: scrapes are on Prometheus's own timer
      }
    },
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
