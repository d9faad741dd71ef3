// Issue 41 §3 on the real node: a real Prometheus (test/prometheus/build.sh) scrapes a capsule pod
// and the operator pod with the scrape configuration docs/operator.md gives (Kubernetes service
// discovery of pods, read from the doc's yaml block), after one task through a capsule with a
// tool, a policy hook and a spend ceiling; then every panel query of the chart's dashboard, as
// Grafana sends it, returns series, the operator's panels included. Prometheus runs inside the
// node's network namespace (where pod IPs and the API server are), with the host's kubeconfig
// pointed at the API server's address there, and is queried with promtool in the same namespace.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { net, nodePaths, repoRoot } from '../cluster/node/config.ts';
import { operatorNamespace } from '../cluster/node/operator.ts';
import { BUILD_TIMEOUT_MS, ensurePrometheus } from '../support/build-on-use.ts';
import { asSent, renderedDashboard, type Panel } from '../prometheus/chart-monitoring.ts';
import { startPrometheus, type Prometheus } from '../prometheus/prometheus-server.ts';
import {
  apiKeySecret,
  apply,
  callerToken,
  clientPod,
  createNamespace,
  deleteNamespace,
  fixturePod,
  kubeconfig,
  messageSend,
  policyAdmits,
  serviceAnswers,
  providerPod,
  waitFor,
  wgetPost,
  shellGuardHook,
} from './support.ts';

const ns = 'rn-prometheus';
const tool = 'echo-tool.wasm';
const hook = 'hook-deny-shell.wasm';
const cleanup: (() => Promise<unknown>)[] = [];
let prometheus: Prometheus;
let panels: Panel[];

/** The scrape_configs of docs/operator.md ("Scraping without the Prometheus Operator"). */
function documentedScrapeConfigs(): any[] {
  const doc = readFileSync(join(repoRoot, 'docs', 'operator.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Scraping without the Prometheus Operator'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/operator.md: no yaml block under "Scraping without the Prometheus Operator"');
  return parse(block[1]!).scrape_configs;
}

beforeAll(() => ensurePrometheus(), BUILD_TIMEOUT_MS);
beforeAll(async () => {
  await createNamespace(ns);
  cleanup.push(() => deleteNamespace(ns));
  await apply(apiKeySecret(ns));
  const [files, provider] = await Promise.all([
    fixturePod(ns, [tool, hook]),
    providerPod(ns, {
      turns: [
        // a tool call (tool latency) and a shell call the policy hook refuses (hook latency)
        {
          toolCalls: [
            { name: 'echoer', input: { text: 'hi' } },
            { name: 'printf', input: { command: 'x' } },
          ],
          usage: { input: 150, output: 20 },
        },
        { text: 'Echoed; printf was refused.', usage: { input: 180, output: 10 } },
      ],
    }),
  ]);
  await apply(shellGuardHook(ns, files[hook]!));
  await apply(
    stringify({
      apiVersion: 'murmur.io/v1alpha1',
      kind: 'Capsule',
      metadata: { name: 'watched', namespace: ns },
      spec: {
        version: '1.0.0',
        artifacts: [
          { name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' },
          { name: 'echoer', runtime: 'tool', source: files[tool] },
        ],
        capabilities: { shell: { allow: ['printf'] } },
        hooks: [{ name: 'shell-guard' }],
        inference: {
          driver: { artifact: 'driver-anthropic' },
          model: 'claude-sonnet-4-5',
          endpoint: provider,
          max_turns: 4,
          max_tokens: 1024,
          max_session_tokens: 1_000_000,
          system_prompt: 'You echo.',
          apiKeySecretRef: { name: 'anthropic-key', key: 'api-key' },
        },
        ingress: { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
      },
    }),
  );
  await waitFor(ns, 'capsule/watched', 'condition=Ready', '180s');
  const exec = await clientPod(ns, 'client', { role: 'client' });
  await policyAdmits(ns, 'client');
  await serviceAnswers(exec, ns, 'watched');
  const url = `http://watched.${ns}.svc.cluster.local:8080/`;
  const r = await exec(wgetPost(url, messageSend('Echo hi, then run printf.'), 60, await callerToken(ns, url)));
  expect(r.code, r.out).toBe(0);
  expect(JSON.parse(r.out).result.status.state, r.out).toBe('completed');

  // The documented jobs, each limited to this test's namespaces and given the API server as the
  // node's network namespace reaches it (in a cluster, Prometheus's in-cluster ServiceAccount).
  const dir = join(nodePaths(inject('realnode').name).state, 'prometheus');
  mkdirSync(dir, { recursive: true });
  const kc = join(dir, 'kubeconfig');
  writeFileSync(kc, readFileSync(kubeconfig(), 'utf8').replace(/server: https:\/\/\S+/, `server: https://${net.nodeIp}:${net.apiPort}`), { mode: 0o600 });
  const jobs = documentedScrapeConfigs();
  expect(jobs.map((j) => j.job_name)).toEqual(['capsules', 'capsule-operator']);
  for (const j of jobs) {
    j.kubernetes_sd_configs[0].kubeconfig_file = kc;
    j.kubernetes_sd_configs[0].namespaces.names = [j.job_name === 'capsules' ? ns : operatorNamespace];
  }
  prometheus = await startPrometheus(stringify({ global: { scrape_interval: '1s', evaluation_interval: '1s' }, scrape_configs: jobs }), {
    netns: nodePaths(inject('realnode').name).netns,
    port: 19090,
    parent: dir,
  });
  cleanup.push(() => prometheus.stop());
  // rate() needs two samples in its window; four scrapes of each job leave room for a late one.
  await prometheus.scraped('capsules', 4, 120_000);
  await prometheus.scraped('capsule-operator', 4, 120_000);
  panels = (await renderedDashboard()).panels.filter((p) => (p as { type: string }).type !== 'row');
}, 600_000);
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

describe('Prometheus on the real node with the documented scrape configuration', () => {
  it('finds the capsule pod and the operator pod through the Kubernetes API and labels them by namespace and pod', async () => {
    const up = (await prometheus.query('up == 1')).data!.result.map((s) => [s.metric.job, s.metric.namespace, s.metric.pod?.split('-')[0]]);
    expect(up).toContainEqual(['capsules', ns, 'watched']);
    expect(up).toContainEqual(['capsule-operator', operatorNamespace, 'capsule']);
    // one target per capsule pod: the runtime container's metrics port only
    expect((await prometheus.query('count by (pod) (up{job="capsules"})')).data!.result.every((s) => s.value[1] === '1')).toBe(true);
  });

  it("every dashboard panel query returns series after one task, the operator's included", async () => {
    const empty: string[] = [];
    for (const p of panels) {
      for (const t of p.targets) {
        const r = await prometheus.query(asSent(t.expr, { rateInterval: '10s', range: '10m' }));
        expect(r.status, `${p.title} ${t.refId}: ${r.error ?? ''}`).toBe('success');
        if ((r.data?.result.length ?? 0) === 0) empty.push(`${p.title} ${t.refId}: ${t.expr}`);
      }
    }
    expect(empty).toEqual([]);
  });

  it("the task's tokens and the spend ceiling are what the capsule pod reported", async () => {
    const tokens = await prometheus.query(`sum(capsule_tokens_total{namespace="${ns}", capsule="watched", token_type=~"input|output"})`);
    expect(Number(tokens.data!.result[0]!.value[1])).toBe(150 + 20 + 180 + 10);
    const ceiling = await prometheus.query(`capsule_spend_ceiling_tokens{namespace="${ns}"}`);
    expect(ceiling.data!.result.map((s) => s.value[1])).toEqual(['1000000']);
  });
});
