/**
 * The Helm chart: lint, template (RBAC least privilege, ServiceMonitor only when the Prometheus
 * Operator API exists), and install / upgrade / uninstall on the real API server.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KubeClient } from '../../operator/kube/client.ts';
import { DEFAULT_RESOURCES } from '../../operator/translate/builders/deployment.ts';
import { client, deleteNamespace, ensureCrds, eventually, helm, kubeconfig, kubectl, kubectlOk, newNamespace, operator, repoRoot } from './helpers.ts';

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

const docs = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean) as any[];

describe('helm chart', () => {
  it('lints', async () => {
    const r = await helm(['lint', chart]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it("by default grants the operator cluster-wide only reading Capsules and creating Events; Roles in the watched namespaces; TokenReview for the watched namespaces' ServiceAccounts", async () => {
    const all = docs((await helm(['template', 'x', chart, '-n', 'ops'])).stdout);
    // Cluster-scoped RBAC: create tokenreviews, for the ServiceAccounts of the watched namespaces
    // (capsule pods verify callers' tokens); and, for the operator, read Capsules and create Events
    // (a Capsule outside watchNamespaces is told so: docs/operator.md#namespaces-not-watched).
    const clusterRoles = Object.fromEntries(all.filter((d) => d.kind === 'ClusterRole').map((d) => [d.metadata.name, d.rules]));
    expect(clusterRoles).toEqual({
      'x-capsule-operator-capsule-tokenreview': [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }],
      'x-capsule-operator-unwatched-capsules': [
        { apiGroups: ['murmur.io'], resources: ['capsules'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      ],
      // The activator (activator-rbac.yaml): a caller may be any pod of any namespace.
      'x-activator': [
        { apiGroups: [''], resources: ['pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      ],
    });
    const crbs = Object.fromEntries(all.filter((d) => d.kind === 'ClusterRoleBinding').map((d) => [d.roleRef.name, d.subjects]));
    expect(crbs).toEqual({
      'x-capsule-operator-capsule-tokenreview': [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:serviceaccounts:default' }],
      'x-capsule-operator-unwatched-capsules': [{ kind: 'ServiceAccount', name: 'x-capsule-operator', namespace: 'ops' }],
      'x-activator': [{ kind: 'ServiceAccount', name: 'x-activator', namespace: 'ops' }],
    });
    // The activator's Role in each watched namespace (activator-rbac.yaml): reads and Events only.
    expect(all.filter((d) => d.kind === 'Role' && d.metadata.name === 'x-activator').map((d) => [d.metadata.namespace, d.rules])).toEqual([
      [
        'default',
        [
          { apiGroups: ['murmur.io'], resources: ['capsules'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
          { apiGroups: [''], resources: ['events'], verbs: ['create'] },
        ],
      ],
    ]);
    const without = docs(
      (
        await helm([
          'template',
          'x',
          chart,
          '-n',
          'ops',
          '--set',
          'a2a.tokenReview=false',
          '--set',
          'tellUnwatchedCapsules=false',
          '--set',
          'activator.enabled=false',
        ])
      ).stdout,
    );
    expect(without.some((d) => d.kind === 'ClusterRole' || d.kind === 'ClusterRoleBinding')).toBe(false);
    // The operator's Roles in the watched namespaces (not its Lease and activator-endpoints ones in
    // the release namespace, nor the activator's own).
    const ownNs = (d: any) => d.metadata.name !== 'x-capsule-operator';
    const roles = all.filter((d) => d.kind === 'Role' && !ownNs(d) && d.metadata.name !== 'x-activator');
    expect(roles.map((d) => d.metadata.namespace)).toEqual(['default']);
    const verbsFor = (res: string) => roles[0].rules.filter((r: any) => r.resources.includes(res)).flatMap((r: any) => r.verbs);
    expect(verbsFor('secrets').sort()).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('capsules').sort()).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('capsules/status').sort()).toEqual(['get', 'patch', 'update']);
    expect(verbsFor('hooks/status').sort()).toEqual(['get', 'patch', 'update']);
    expect(roles[0].rules.some((r: any) => r.verbs.includes('*') || r.resources.includes('*'))).toBe(false);
    const opEnv = Object.fromEntries(
      all
        .find((d) => d.kind === 'Deployment' && d.metadata.name === 'x-capsule-operator')
        .spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value]),
    );
    expect([opEnv.DNS_NAMESPACE, opEnv.DNS_POD_LABELS, opEnv.WATCH_NAMESPACES]).toEqual(['kube-system', 'k8s-app=kube-dns', 'default']);
    const lease = all.find((d) => d.kind === 'Role' && d.metadata.name.endsWith('leader-election'));
    expect(lease.metadata.namespace).toBe('ops');

    const scoped = docs(
      (
        await helm([
          'template',
          'x',
          chart,
          '-n',
          'ops',
          '--set',
          'watchNamespaces={a,b}',
          '--set',
          'a2a.tokenReview=false',
          '--set',
          'tellUnwatchedCapsules=false',
          '--set',
          'activator.enabled=false',
        ])
      ).stdout,
    );
    expect(scoped.some((d) => d.kind === 'ClusterRole')).toBe(false);
    const scopedReview = docs((await helm(['template', 'x', chart, '-n', 'ops', '--set', 'watchNamespaces={a,b}'])).stdout).find(
      (d) => d.kind === 'ClusterRoleBinding' && d.metadata.name.endsWith('tokenreview'),
    );
    expect(scopedReview.subjects.map((x: any) => x.name)).toEqual(['system:serviceaccounts:a', 'system:serviceaccounts:b']);
    expect(scoped.filter((d) => d.kind === 'Role' && !ownNs(d)).map((d) => d.metadata.namespace)).toEqual(['a', 'b']);

    // Cluster-wide only when asked for, by name.
    const wide = docs((await helm(['template', 'x', chart, '-n', 'ops', '--set', 'clusterWide=true', '--set', 'watchNamespaces=null'])).stdout);
    expect(wide.some((d) => d.kind === 'ClusterRole' && d.metadata.name === 'x-capsule-operator')).toBe(true);
    expect(wide.find((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name.endsWith('tokenreview')).subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:serviceaccounts' },
    ]);
    const none = await helm(['template', 'x', chart, '--set', 'watchNamespaces=null']);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('watchNamespaces is empty');
  });

  it('values.schema.json rejects bad values at helm install/template', async () => {
    for (const [set, what] of [
      ['replicas=many', 'replicas'],
      ['image.pullPolicy=Sometimes', 'pullPolicy'],
      ['network.egressExcept={not-a-cidr}', 'egressExcept'],
      ['watchNamespaces={Bad_NS}', 'watchNamespaces'],
      ['watchNamespace={a}', 'watchNamespace'],
      ['usage.scrapeIntervalSeconds=-1', 'scrapeIntervalSeconds'],
    ] as const) {
      const r = await helm(['template', 'x', chart, '--set', set]);
      expect(r.code, set).not.toBe(0);
      expect(r.stderr, set).toContain(what);
    }
    // network.apiServer: the capsules' TokenReview egress, passed to the operator as cidr:port.
    const apiServer = docs(
      (await helm(['template', 'x', chart, '--set-json', 'network.apiServer=[{"cidr":"10.0.0.1/32","port":6443},{"cidr":"fd00::1/128","port":443}]'])).stdout,
    );
    const opEnv = apiServer.find((d) => d.kind === 'Deployment' && d.metadata.name === 'x-capsule-operator').spec.template.spec.containers[0].env;
    expect(opEnv.find((e: any) => e.name === 'API_SERVER_EGRESS').value).toBe('10.0.0.1/32:6443,fd00::1/128:443');
    for (const bad of ['[{"cidr":"10.0.0.1","port":6443}]', '[{"cidr":"10.0.0.1/32","port":0}]', '[{"cidr":"10.0.0.1/32"}]']) {
      const r = await helm(['template', 'x', chart, '--set-json', `network.apiServer=${bad}`]);
      expect(r.code, bad).not.toBe(0);
      expect(r.stderr, bad).toContain('apiServer');
    }
    // And the interface other tooling uses stays valid.
    const ok = await helm([
      'template',
      'x',
      chart,
      '--set',
      'image.repository=r.example/op',
      '--set',
      'image.tag=dev',
      '--set',
      'image.pullPolicy=Never',
      '--set',
      'runtime.image.pullPolicy=Never',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('the operator and the activator outlast a minute of CPU starvation: liveness waits 60 s, and neither weighs less than its share', async () => {
    const r = await helm(['template', 'x', chart, '-n', 'ops']);
    expect(r.code, r.stderr).toBe(0);
    const milli = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
    const deps = docs(r.stdout).filter((d) => d.kind === 'Deployment');
    expect(deps.map((d) => d.metadata.name).sort()).toEqual(['x-activator', 'x-capsule-operator']);
    for (const d of deps) {
      const c = d.spec.template.spec.containers[0];
      const live = c.livenessProbe;
      // Killed only after a minute without an answer, each try given 5 s.
      expect(live.periodSeconds * live.failureThreshold, d.metadata.name).toBeGreaterThanOrEqual(60);
      expect(live.timeoutSeconds, d.metadata.name).toBeGreaterThanOrEqual(5);
      expect(milli(c.resources.requests.cpu), d.metadata.name).toBeGreaterThanOrEqual(50);
    }
    // The operator weighs at least as much as one capsule pod (the default request) on a contended node.
    const op = deps.find((d) => d.metadata.name === 'x-capsule-operator')!.spec.template.spec.containers[0];
    expect(milli(op.resources.requests.cpu)).toBeGreaterThanOrEqual(milli(DEFAULT_RESOURCES.requests.cpu));
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
      await kubectlOk(['create', 'secret', 'generic', 'k', '-n', watched, '--from-literal=api-key=x']);
      const r = await kubectl(
        ['apply', '-n', watched, '-f', '-'],
        `apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: rbac }
spec:
  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]
  inference: { driver: { artifact: drv }, model: m, endpoint: 'https://api.anthropic.com', apiKeySecretRef: { name: k, key: api-key } }
  hooks: [{ name: absent }]
`,
      );
      expect(r.code, r.stderr).toBe(0);
      // Blocked by the missing Hook: status and an Event written with the chart's permissions.
      await eventually('status + event as the ServiceAccount', async () => {
        const c = await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${watched}/capsules/rbac`);
        const ev = await client.list<any>(`/api/v1/namespaces/${watched}/events`, { fieldSelector: 'involvedObject.name=rbac' });
        return c?.status?.conditions?.some((x: any) => x.reason === 'MissingHook') && ev.items.length > 0;
      });
      await kubectlOk(
        ['apply', '-n', watched, '-f', '-'],
        'apiVersion: murmur.io/v1alpha1\nkind: Hook\nmetadata: { name: absent }\nspec: { artifact: { name: absent, version: 1.0.0 } }\n',
      );
      await eventually(
        'objects applied as the ServiceAccount',
        async () => (await client.get(`/apis/apps/v1/namespaces/${watched}/deployments/rbac`)) !== undefined,
      );
      await eventually(
        'Hook status as the ServiceAccount',
        async () => (await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${watched}/hooks/absent`))?.status?.usedBy?.[0] === 'rbac',
      );
      expect(await op.metrics.total('capsule_operator_reconcile_errors_total')).toBe(0);
      // Outside the watched namespaces: Capsules may be read (to tell them they are not watched), Hooks not.
      const denied = await asSa.list('/apis/murmur.io/v1alpha1/namespaces/default/hooks').then(
        () => 0,
        (e: { status: number }) => e.status,
      );
      expect(denied).toBe(403);
      // What the API server's authorizer says (kubectl auth can-i, as the ServiceAccount).
      const sa = `system:serviceaccount:${ns}:capsule-operator`;
      const can = async (verb: string, res: string, where: string[]) => (await kubectl(['auth', 'can-i', verb, res, ...where, `--as=${sa}`])).stdout.trim();
      for (const where of [['-n', 'kube-system'], ['-n', 'default'], ['--all-namespaces']]) {
        for (const [verb, res] of [
          ['get', 'secrets'],
          ['list', 'secrets'],
          ['watch', 'secrets'],
          ['create', 'deployments.apps'],
          ['patch', 'configmaps'],
          ['create', 'services'],
          ['delete', 'networkpolicies.networking.k8s.io'],
          ['create', 'serviceaccounts'],
        ]) {
          expect(await can(verb!, res!, where), `${verb} ${res} ${where.join(' ')}`).toBe('no');
        }
      }
      // The one cluster-wide grant (tellUnwatchedCapsules): read Capsules, create Events; nothing else of theirs.
      for (const [verb, res] of [
        ['list', 'capsules.murmur.io'],
        ['watch', 'capsules.murmur.io'],
        ['create', 'events'],
      ]) {
        expect(await can(verb!, res!, ['--all-namespaces']), `${verb} ${res} cluster-wide`).toBe('yes');
      }
      expect(await can('patch', 'capsules.murmur.io', ['-n', 'default', '--subresource=status'])).toBe('no');
      expect(await can('patch', 'events', ['-n', 'default'])).toBe('no');
      for (const [verb, res] of [
        ['list', 'secrets'],
        ['watch', 'secrets'],
        ['patch', 'deployments.apps'],
        ['create', 'configmaps'],
        ['create', 'events'],
      ]) {
        expect(await can(verb!, res!, ['-n', watched]), `${verb} ${res} in the watched namespace`).toBe('yes');
      }
      expect(await can('patch', 'capsules.murmur.io', ['-n', watched, '--subresource=status'])).toBe('yes');
      expect(await can('update', 'capsules.murmur.io', ['-n', watched])).toBe('no');
      expect(await can('get', 'leases.coordination.k8s.io/capsule-operator', ['-n', ns])).toBe('yes');
      expect(await can('get', 'leases.coordination.k8s.io/other', ['-n', ns])).toBe('no');
      // The operator cannot review tokens, mint them, or grant RBAC.
      for (const [verb, res, where] of [
        ['create', 'tokenreviews.authentication.k8s.io', []],
        ['create', 'serviceaccounts', ['-n', watched, '--subresource=token']],
        ['create', 'clusterrolebindings.rbac.authorization.k8s.io', []],
        ['create', 'rolebindings.rbac.authorization.k8s.io', ['-n', watched]],
        ['bind', 'clusterroles.rbac.authorization.k8s.io', []],
      ] as const) {
        expect(await can(verb, res, [...where]), `operator: ${verb} ${res} ${where.join(' ')}`).toBe('no');
      }

      // A capsule's ServiceAccount in a watched namespace may create TokenReviews (to verify its
      // callers) and nothing else the chart grants: no SubjectAccessReview, no token minting, no reads.
      const capsuleSa = `system:serviceaccount:${watched}:rbac`;
      const capsuleCan = async (verb: string, res: string, where: string[] = [], as = capsuleSa) =>
        (await kubectl(['auth', 'can-i', verb, res, ...where, `--as=${as}`])).stdout.trim();
      expect(await capsuleCan('create', 'tokenreviews.authentication.k8s.io')).toBe('yes');
      for (const [verb, res, where] of [
        ['create', 'subjectaccessreviews.authorization.k8s.io', []],
        ['create', 'serviceaccounts', ['-n', watched, '--subresource=token']],
        ['get', 'secrets', ['-n', watched]],
        ['list', 'pods', ['-n', watched]],
        ['get', 'tokenreviews.authentication.k8s.io', []],
        ['list', 'capsules.murmur.io', ['-n', watched]],
      ] as const) {
        expect(await capsuleCan(verb, res, [...where]), `capsule ServiceAccount: ${verb} ${res}`).toBe('no');
      }
      // ServiceAccounts of namespaces the release does not watch (its own included) get nothing.
      expect(await capsuleCan('create', 'tokenreviews.authentication.k8s.io', [], `system:serviceaccount:${ns}:someone`)).toBe('no');
    } finally {
      await op.stop();
      asSa.close();
    }

    const up = await helm([
      'upgrade',
      'capsule-operator',
      chart,
      '-n',
      ns,
      '--reuse-values',
      '--set',
      'replicas=2',
      '--set',
      'otlp.endpoint=http://otel.observability.svc:4318',
    ]);
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

  it('the documented CRD upgrade command works on a changed CRD that Helm created', async () => {
    // A copy of the chart whose Capsule CRD lives in a group of its own (the shared test cluster
    // already has the real CRDs), in an older shape: without the /scale subresource.
    const dir = mkdtempSync(join(tmpdir(), 'crd-upgrade-'));
    const group = `upgrade${Date.now().toString(36)}.example`;
    // No short names or categories: `kubectl get cap` must keep meaning the real Capsules.
    const crdText = (file: string) =>
      readFileSync(join(chart, 'crds', file), 'utf8')
        .replaceAll('murmur.io', group)
        .split('\n')
        .filter((l) => !/^\s+(shortNames:|categories:|- cap$|- murmur$)/.test(l))
        .join('\n');
    const old = join(dir, 'v1');
    const next = join(dir, 'v2');
    try {
      for (const d of [old, next]) {
        cpSync(chart, d, { recursive: true });
        rmSync(join(d, 'crds', 'murmur.io_hooks.yaml'));
      }
      const current = crdText('murmur.io_capsules.yaml');
      writeFileSync(
        join(old, 'crds', 'murmur.io_capsules.yaml'),
        current
          .split('\n')
          .filter((l) => !/^\s+(scale:|specReplicasPath:|statusReplicasPath:|labelSelectorPath:)/.test(l))
          .join('\n'),
      );
      writeFileSync(join(next, 'crds', 'murmur.io_capsules.yaml'), current);
      expect(readFileSync(join(old, 'crds', 'murmur.io_capsules.yaml'), 'utf8')).not.toContain('specReplicasPath');
      const release = `crd-up-${Date.now().toString(36)}`;
      const inst = await helm(['install', release, old, '-n', ns, '--set', `watchNamespaces={${watched}}`, '--wait=false']);
      expect(inst.code, inst.stderr).toBe(0);
      const name = `capsules.${group}`;
      const crd = await eventually('CRD created by helm', () => client.get<any>(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`));
      expect(crd.spec.versions[0].subresources.scale).toBeUndefined();
      const up = await helm(['upgrade', release, next, '-n', ns, '--reuse-values', '--wait=false']);
      expect(up.code, up.stderr).toBe(0);
      // Helm does not touch CRDs on upgrade: the documented command does.
      expect((await client.get<any>(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`)).spec.versions[0].subresources.scale).toBeUndefined();
      const crds = (await helm(['show', 'crds', next])).stdout;
      const plain = await kubectl(['apply', '--server-side', '-f', '-'], crds);
      const forced = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], crds);
      expect(forced.code, forced.stderr).toBe(0);
      const after = await client.get<any>(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      expect(after.spec.versions[0].subresources.scale).toMatchObject({ specReplicasPath: '.spec.replicas', labelSelectorPath: '.status.selector' });
      // Why the flag is documented: without it a field Helm set is a conflict (or, if Helm's
      // manager owns nothing that changed, the plain apply already worked).
      if (plain.code !== 0) expect(plain.stderr).toMatch(/conflict/i);
      await helm(['uninstall', release, '-n', ns]);
      await kubectlOk(['delete', 'crd', name, '--wait=false']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
