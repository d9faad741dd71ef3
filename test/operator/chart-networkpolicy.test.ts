/**
 * The operator pod's NetworkPolicy from the chart (issue 38 §6): what `helm template` renders for
 * it, and that the real API server accepts it (server-side dry run). Whether a CNI enforces it is
 * the CNI's business; the rules are what the operator needs and nothing more.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { client, helm, kubectl, kubectlOk, repoRoot } from './helpers.ts';

const chart = join(repoRoot, 'charts', 'capsule-operator');
const render = async (...set: string[]) => {
  const r = await helm(['template', 'x', chart, '-n', 'ops', ...set.flatMap((s) => (s.startsWith('--') ? [s] : ['--set', s]))]);
  if (r.code !== 0) throw new Error(`helm template ${set.join(' ')}: ${r.stderr}`);
  return {
    text: r.stdout,
    docs: parseAllDocuments(r.stdout)
      .map((d) => d.toJS())
      .filter(Boolean) as any[],
  };
};
const policyOf = (docs: any[]) => docs.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name === 'x-capsule-operator');

describe('the operator pod NetworkPolicy', () => {
  it("selects the operator pods; in: only the metrics port; out: the API server, DNS, and the capsules' metrics and a2a ports in the watched namespaces", async () => {
    const { docs } = await render('network.apiServer[0].cidr=10.0.0.1/32', 'network.apiServer[0].port=6443', 'watchNamespaces={team-a,team-b}');
    const p = policyOf(docs);
    expect(p.metadata).toMatchObject({ name: 'x-capsule-operator', namespace: 'ops' });
    const pod = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'x-capsule-operator').spec.template.metadata.labels;
    expect(Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => pod[k] === v)).toBe(true);
    expect(p.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(p.spec.ingress).toEqual([{ ports: [{ protocol: 'TCP', port: 8080 }] }]);
    expect(p.spec.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: 6443 }] },
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      {
        to: ['team-a', 'team-b'].map((ns) => ({
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'capsule' } },
        })),
        // metrics: token usage and idle readings; a2a: the agent card read before a Capsule sleeps.
        ports: [
          { protocol: 'TCP', port: 9090 },
          { protocol: 'TCP', port: 8080 },
        ],
      },
    ]);
  });

  it('its metrics port admits only network.metricsFromNamespaces when set; no usage scrape and no activator, no egress to capsules', async () => {
    const p = policyOf(
      (await render('network.metricsFromNamespaces={monitoring}', 'usage.scrapeIntervalSeconds=0', 'activator.enabled=false', 'metrics.port=9443')).docs,
    );
    expect(p.spec.ingress).toEqual([
      { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ protocol: 'TCP', port: 9443 }] },
    ]);
    expect(p.spec.egress.some((r: any) => r.to?.some((x: any) => x.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'capsule'))).toBe(false);
  });

  it('without a known API server address it opens 443 and 6443 only; clusterWide scrapes capsules in every namespace', async () => {
    const p = policyOf((await render('clusterWide=true', 'watchNamespaces=null')).docs);
    expect(p.spec.egress[0]).toEqual({
      ports: [
        { protocol: 'TCP', port: 443 },
        { protocol: 'TCP', port: 6443 },
      ],
    });
    expect(p.spec.egress[2].to).toEqual([{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'capsule' } } }]);
  });

  it("installed on a cluster, the API server rules name the kubernetes EndpointSlice's addresses and the kubernetes Service's", async () => {
    // The test API server runs without its endpoint reconciler (and listens on loopback, which an
    // EndpointSlice may not name): give it the EndpointSlice every cluster's API server keeps, with
    // an address as a cluster's would be, for the time of this test.
    const slice = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.1'] }],
      ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
    };
    const existing = await client.get<any>('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes');
    if (!existing) await kubectlOk(['create', '-f', '-'], JSON.stringify(slice));
    try {
      // --dry-run=server: helm's lookups read the real API server, as at install.
      const p = policyOf((await render('--dry-run=server')).docs);
      const live = existing ?? slice;
      const svc = await client.get<any>('/api/v1/namespaces/default/services/kubernetes');
      const want = [
        ...live.endpoints
          .flatMap((e: any) => e.addresses)
          .map((ip: string) => ({ to: [{ ipBlock: { cidr: `${ip}/32` } }], ports: [{ protocol: 'TCP', port: live.ports[0].port }] })),
        { to: [{ ipBlock: { cidr: `${svc.spec.clusterIP}/32` } }], ports: [{ protocol: 'TCP', port: svc.spec.ports[0].port }] },
      ];
      expect(p.spec.egress.slice(0, want.length)).toEqual(want);
    } finally {
      if (!existing) await kubectlOk(['delete', 'endpointslice', 'kubernetes', '-n', 'default']);
    }
  });

  it('networkPolicy.enabled=false leaves it out', async () => {
    expect(policyOf((await render('networkPolicy.enabled=false')).docs)).toBeUndefined();
  });

  it('the API server accepts it (server-side dry run)', async () => {
    const { docs } = await render('network.apiServer[0].cidr=10.0.0.1/32', 'network.apiServer[0].port=6443');
    const yaml = JSON.stringify({ ...policyOf(docs), metadata: { ...policyOf(docs).metadata, namespace: 'default' } });
    const r = await kubectl(['apply', '--dry-run=server', '-f', '-'], yaml);
    expect(r.code, r.stderr).toBe(0);
  });
});
