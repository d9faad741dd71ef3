/**
 * The activator's objects in the chart (templates/activator-*.yaml), as `helm template` renders
 * them: the Deployment (the operator's image, the activator's entrypoint, its settings), the Service
 * the operator finds it by (and the operator's env naming it), its NetworkPolicy (in: its port from
 * anywhere, metrics as the operator's; out: the API server and the capsule pods' A2A port only, no
 * DNS), and `activator.enabled=false` leaving all of it out. The API server accepts what it renders.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { activatorEnv } from '../../operator/activator/config.ts';
import { helm, kubectl, repoRoot } from './helpers.ts';

const chart = join(repoRoot, 'charts', 'capsule-operator');
const render = async (...set: string[]) => {
  const r = await helm(['template', 'x', chart, '-n', 'ops', ...set.flatMap((x) => ['--set', x])]);
  expect(r.code, r.stderr).toBe(0);
  return {
    text: r.stdout,
    docs: parseAllDocuments(r.stdout)
      .map((d) => d.toJS())
      .filter(Boolean) as any[],
  };
};
const named = (docs: any[], kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name);
const envOf = (dep: any) => Object.fromEntries(dep.spec.template.spec.containers[0].env.filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value]));

describe('the chart: the activator', () => {
  it('a Deployment of the operator image running the activator, with its settings, probes and a locked-down pod', async () => {
    const { docs } = await render('activator.holdSeconds=30', 'watchNamespaces={team-a,team-b}', 'image.tag=dev');
    const dep = named(docs, 'Deployment', 'x-activator');
    const op = named(docs, 'Deployment', 'x-capsule-operator');
    const c = dep.spec.template.spec.containers[0];
    expect(c.image).toBe(op.spec.template.spec.containers[0].image);
    expect(c.command).toEqual(['node', '--max-semi-space-size=2', '/app/dist/operator/activator/main.js']);
    const env = envOf(dep);
    // What main.ts reads, read by its own parser.
    expect(activatorEnv(env)).toEqual({ port: 8012, metricsPort: 9090, holdSeconds: 30, namespaces: ['team-a', 'team-b'], clusterDomain: 'cluster.local' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
    expect(dep.spec.template.spec.serviceAccountName).toBe('x-activator');
    expect(dep.spec.replicas).toBe(1);
  });

  it('a stopping activator keeps serving 5 s (its preStop pause, for the Service proxies to catch up) before SIGTERM, inside its grace period', async () => {
    const { docs } = await render();
    const pod = named(docs, 'Deployment', 'x-activator').spec.template.spec;
    expect(pod.containers[0].lifecycle).toEqual({ preStop: { exec: { command: ['sleep', '5'] } } });
    // The pause, then up to 10 s for what it holds (main.ts), then out before the kubelet's SIGKILL.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(5 + 13);
  });

  it("its Service is the one the operator's environment names, selecting its pods, on the port the operator puts in the slices", async () => {
    const { docs } = await render();
    const svc = named(docs, 'Service', 'x-activator');
    const dep = named(docs, 'Deployment', 'x-activator');
    const opEnv = envOf(named(docs, 'Deployment', 'x-capsule-operator'));
    expect(opEnv.CAPSULE_ACTIVATOR_SERVICE).toBe('x-activator');
    expect(opEnv.CAPSULE_ACTIVATOR_NAMESPACE).toBe('ops');
    expect(svc.metadata.namespace).toBe('ops');
    expect(svc.spec.ports.find((p: any) => p.name === 'http').port).toBe(Number(opEnv.CAPSULE_ACTIVATOR_PORT));
    expect(Number(opEnv.CAPSULE_ACTIVATOR_PORT)).toBe(Number(envOf(dep).MURMUR_ACTIVATOR_PORT));
    const podLabels = dep.spec.template.metadata.labels;
    expect(Object.entries(svc.spec.selector).every(([k, v]) => podLabels[k] === v)).toBe(true);
    // The capsules' NetworkPolicies admit the activator by these labels: they must be its pods'.
    for (const pair of String(opEnv.CAPSULE_ACTIVATOR_POD_LABELS).split(',')) {
      const [k, v] = pair.split('=') as [string, string];
      expect(podLabels[k], pair).toBe(v);
    }
  });

  it("its NetworkPolicy: in, its port from anywhere and metrics as the operator's; out, the API server and the capsule pods' A2A port, no DNS", async () => {
    const { docs } = await render(
      'network.apiServer[0].cidr=10.0.0.1/32',
      'network.apiServer[0].port=6443',
      'watchNamespaces={team-a}',
      'network.metricsFromNamespaces={monitoring}',
    );
    const p = named(docs, 'NetworkPolicy', 'x-activator');
    const pod = named(docs, 'Deployment', 'x-activator').spec.template.metadata.labels;
    expect(Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => pod[k] === v)).toBe(true);
    expect(p.spec.ingress).toEqual([
      { ports: [{ protocol: 'TCP', port: 8012 }] },
      { ports: [{ protocol: 'TCP', port: 9090 }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] },
    ]);
    expect(p.spec.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: 6443 }] },
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'capsule' } },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ]);
  });

  it('the API server accepts the activator objects (server-side dry run)', async () => {
    const { docs } = await render();
    const mine = docs.filter((d) => d.metadata.name === 'x-activator' && ['Deployment', 'Service', 'NetworkPolicy', 'ServiceAccount'].includes(d.kind));
    expect(mine).toHaveLength(4);
    const ns = await kubectl(['create', 'namespace', 'ops', '--dry-run=server']);
    expect(ns.code, ns.stderr).toBe(0);
    const text = mine.map((d) => JSON.stringify({ ...d, metadata: { ...d.metadata, namespace: 'default' } })).join('\n');
    const r = await kubectl(['apply', '--dry-run=server', '-f', '-'], text);
    expect(r.code, r.stderr).toBe(0);
  });

  it('activator.enabled=false leaves every activator object and the operator env out', async () => {
    const { docs } = await render('activator.enabled=false');
    expect(docs.filter((d) => d.metadata.name.includes('activator')).map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([]);
    expect(envOf(named(docs, 'Deployment', 'x-capsule-operator')).CAPSULE_ACTIVATOR_SERVICE).toBeUndefined();
  });
});
