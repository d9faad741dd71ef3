/**
 * The Helm chart: lint, template (RBAC least privilege, ServiceMonitor only when the Prometheus
 * Operator API exists), and install / upgrade / uninstall on the real API server.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KubeClient } from '../../operator/kube/client.ts';
import { client, deleteNamespace, ensureCrds, eventually, helm, kubeconfig, kubectl, newNamespace, operator, repoRoot } from './helpers.ts';

const chart = join(repoRoot, 'charts', 'capsule-operator');
let ns = '';
let watched = '';

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-helm');
  watched = await newNamespace('op-helm-apps');
});
afterAll(async () => {
  await helm(['uninstall', 'capsule-operator', '-n', ns]);
  await deleteNamespace(ns);
  await deleteNamespace(watched);
});

const docs = (text: string) => parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean) as any[];

describe('helm chart', () => {
  it('lints', async () => {
    const r = await helm(['lint', chart]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('renders least-privilege RBAC (cluster-wide or per watched namespace)', async () => {
    const all = docs((await helm(['template', 'x', chart, '-n', 'ops'])).stdout);
    const cr = all.find((d) => d.kind === 'ClusterRole');
    const verbsFor = (res: string) => cr.rules.filter((r: any) => r.resources.includes(res)).flatMap((r: any) => r.verbs);
    expect(verbsFor('secrets').sort()).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('capsules').sort()).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('capsules/status').sort()).toEqual(['get', 'patch', 'update']);
    expect(verbsFor('hooks/status').sort()).toEqual(['get', 'patch', 'update']);
    expect(cr.rules.some((r: any) => r.verbs.includes('*') || r.resources.includes('*'))).toBe(false);
    const opEnv = Object.fromEntries(all.find((d) => d.kind === 'Deployment').spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    expect([opEnv.DNS_NAMESPACE, opEnv.DNS_POD_LABELS]).toEqual(['kube-system', 'k8s-app=kube-dns']);
    const lease = all.find((d) => d.kind === 'Role' && d.metadata.name.endsWith('leader-election'));
    expect(lease.metadata.namespace).toBe('ops');

    const scoped = docs((await helm(['template', 'x', chart, '-n', 'ops', '--set', 'watchNamespaces={a,b}'])).stdout);
    expect(scoped.some((d) => d.kind === 'ClusterRole')).toBe(false);
    expect(scoped.filter((d) => d.kind === 'Role' && !d.metadata.name.endsWith('leader-election')).map((d) => d.metadata.namespace)).toEqual(['a', 'b']);
  });

  it('creates a ServiceMonitor only when monitoring.coreos.com/v1 exists', async () => {
    const without = docs((await helm(['template', 'x', chart, '--set', 'serviceMonitor.enabled=true'])).stdout);
    expect(without.some((d) => d.kind === 'ServiceMonitor')).toBe(false);
    const withApi = docs((await helm(['template', 'x', chart, '--set', 'serviceMonitor.enabled=true', '--api-versions', 'monitoring.coreos.com/v1'])).stdout);
    expect(withApi.map((d) => d.kind)).toEqual(expect.arrayContaining(['ServiceMonitor', 'PodMonitor']));
  });

  it('refuses replicas > 1 without leader election', async () => {
    const r = await helm(['template', 'x', chart, '--set', 'replicas=2', '--set', 'leaderElection.enabled=false']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('replicas > 1 needs leaderElection.enabled=true');
  });

  it('installs, upgrades and uninstalls', async () => {
    const inst = await helm(['install', 'capsule-operator', chart, '-n', ns, '--set', `watchNamespaces={${watched}}`, '--wait=false']);
    expect(inst.code, inst.stderr).toBe(0);
    expect(inst.stdout).toContain('kubectl apply -f examples/k8s/researcher.yaml');
    const dep = await eventually('operator Deployment', () => client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/capsule-operator`));
    expect(dep.spec.replicas).toBe(1);
    const env = Object.fromEntries(dep.spec.template.spec.containers[0].env.filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value]));
    expect(env.WATCH_NAMESPACES).toBe(watched);
    expect(env.RUNTIME_IMAGE).toBe('ghcr.io/capsule-operator/runtime:0.1.0');
    expect(await client.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${watched}/roles/capsule-operator`)).toBeDefined();
    expect(await client.get(`/api/v1/namespaces/${ns}/services/capsule-operator-metrics`)).toBeDefined();
    expect(await client.get(`/api/v1/namespaces/${ns}/serviceaccounts/capsule-operator`)).toBeDefined();
    expect(await client.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/capsules.murmur.io')).toBeDefined();

    // The chart's RBAC is enough for the operator: run it as the chart's ServiceAccount
    // (impersonated) and let it reconcile a Capsule in the watched namespace.
    const asSa = KubeClient.fromFile(kubeconfig, { impersonate: `system:serviceaccount:${ns}:capsule-operator` });
    const op = await operator([watched], {
      client: asSa,
      leaderElection: { namespace: ns, name: 'capsule-operator', identity: 'rbac-test', retryPeriodMs: 300 },
    });
    try {
      await eventually('leads with the chart RBAC', () => op.isLeader() && op.ready(), 30_000);
      await kubectl(['create', 'secret', 'generic', 'k', '-n', watched, '--from-literal=api-key=x']);
      const r = await kubectl(['apply', '-n', watched, '-f', '-'], `apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: rbac }
spec:
  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]
  inference: { driver: { artifact: drv }, model: m, endpoint: 'https://api.anthropic.com', apiKeySecretRef: { name: k, key: api-key } }
  hooks: [{ name: absent }]
`);
      expect(r.code, r.stderr).toBe(0);
      // Blocked by the missing Hook: status and an Event written with the chart's permissions.
      await eventually('status + event as the ServiceAccount', async () => {
        const c = await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${watched}/capsules/rbac`);
        const ev = await client.list<any>(`/api/v1/namespaces/${watched}/events`, { fieldSelector: 'involvedObject.name=rbac' });
        return c?.status?.conditions?.some((x: any) => x.reason === 'MissingHook') && ev.items.length > 0;
      });
      await kubectl(['apply', '-n', watched, '-f', '-'], 'apiVersion: murmur.io/v1alpha1\nkind: Hook\nmetadata: { name: absent }\nspec: { artifact: { name: absent, version: 1.0.0 } }\n');
      await eventually('objects applied as the ServiceAccount', async () => (await client.get(`/apis/apps/v1/namespaces/${watched}/deployments/rbac`)) !== undefined);
      await eventually('Hook status as the ServiceAccount', async () => (await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${watched}/hooks/absent`))?.status?.usedBy?.[0] === 'rbac');
      expect(await op.metrics.total('capsule_operator_reconcile_errors_total')).toBe(0);
      // Nothing outside the watched namespaces: the ServiceAccount cannot even list Capsules there.
      const denied = await asSa.list('/apis/murmur.io/v1alpha1/namespaces/default/capsules').then(() => 0, (e: { status: number }) => e.status);
      expect(denied).toBe(403);
    } finally {
      await op.stop();
      asSa.close();
    }

    const up = await helm(['upgrade', 'capsule-operator', chart, '-n', ns, '--reuse-values', '--set', 'replicas=2', '--set', 'otlp.endpoint=http://otel.observability.svc:4318']);
    expect(up.code, up.stderr).toBe(0);
    const dep2 = await eventually('upgraded', async () => {
      const d = await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/capsule-operator`);
      return d?.spec.replicas === 2 ? d : undefined;
    });
    expect(dep2.spec.template.spec.containers[0].env.find((e: any) => e.name === 'OTLP_ENDPOINT').value).toBe('http://otel.observability.svc:4318');

    const un = await helm(['uninstall', 'capsule-operator', '-n', ns]);
    expect(un.code, un.stderr).toBe(0);
    await eventually('removed', async () => !(await client.get(`/apis/apps/v1/namespaces/${ns}/deployments/capsule-operator`)));
    expect(await client.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${watched}/roles/capsule-operator`)).toBeUndefined();
    // Helm never deletes CRDs (so Capsules survive an uninstall).
    expect(await client.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/capsules.murmur.io')).toBeDefined();
  });
});
