/**
 * The activator's objects in the chart (templates/activator-*.yaml), as `helm template` renders
 * them: the Deployment (the operator's image, the activator's entrypoint, its settings), the Service
 * the operator finds it by (and the operator's env naming it), its NetworkPolicy (in: its port from
 * anywhere, metrics as the operator's; out: the API server and the capsule pods' A2A port only, no
 * DNS), the activator key both Deployments get from one Secret (kept across upgrades), and
 * `activator.enabled=false` leaving all of it out. The API server accepts what it renders.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { activatorEnv } from '../../operator/activator/config.ts';
import { activatorKeyFrom } from '../../operator/activator/key.ts';
import { client, deleteNamespace, helm, kubectl, newNamespace, repoRoot } from './helpers.ts';

const chart = join(repoRoot, 'charts', 'capsule-operator');
const render = async (...set: string[]) => renderIn('ops', [], ...set);
const renderIn = async (ns: string, flags: string[], ...set: string[]) => {
  const r = await helm(['template', 'x', chart, '-n', ns, ...flags, ...set.flatMap((x) => ['--set', x])]);
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
/** The activator key as the chart's Secret holds it, and the env entry of a Deployment that reads it. */
const keyOf = (docs: any[]) => Buffer.from(named(docs, 'Secret', 'x-activator-key').data.key, 'base64').toString();
const keyEnv = (dep: any) => dep.spec.template.spec.containers[0].env.filter((e: any) => /^CAPSULE_ACTIVATOR_KEY/.test(e.name));
/** How a Deployment gets the key: its env entry, the mount and the volume of the Secret, and the group that may read the file. */
const keyWiring = (dep: any) => {
  const pod = dep.spec.template.spec;
  return {
    env: keyEnv(dep),
    mounts: (pod.containers[0].volumeMounts ?? []).filter((m: any) => m.name === 'activator-key'),
    volumes: (pod.volumes ?? []).filter((v: any) => v.name === 'activator-key'),
    fsGroup: pod.securityContext.fsGroup,
    runAsGroup: pod.securityContext.runAsGroup,
  };
};

describe('the chart: the activator', () => {
  it('a Deployment of the operator image running the activator, with its settings, probes and a locked-down pod', async () => {
    const { docs } = await render('activator.holdSeconds=30', 'watchNamespaces={team-a,team-b}', 'image.tag=dev');
    const dep = named(docs, 'Deployment', 'x-activator');
    const op = named(docs, 'Deployment', 'x-capsule-operator');
    const c = dep.spec.template.spec.containers[0];
    expect(c.image).toBe(op.spec.template.spec.containers[0].image);
    expect(c.command).toEqual(['node', '--max-semi-space-size=2', '/app/dist/operator/activator/main.js']);
    // What main.ts reads, read by its own parser; the key file as the kubelet would lay the Secret out (here, a temp dir).
    const keyFile = join(mkdtempSync(join(tmpdir(), 'activator-key-')), 'key');
    writeFileSync(keyFile, keyOf(docs));
    expect(envOf(dep).CAPSULE_ACTIVATOR_KEY_FILE).toBe('/var/run/secrets/capsule-operator/activator-key/key');
    const env = { ...envOf(dep), CAPSULE_ACTIVATOR_KEY_FILE: keyFile };
    expect(activatorEnv(env)).toEqual({
      port: 8012,
      metricsPort: 9090,
      holdSeconds: 30,
      namespaces: ['team-a', 'team-b'],
      clusterDomain: 'cluster.local',
      apiKeyDigestKey: Buffer.from(keyOf(docs)),
    });
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

  it("its NetworkPolicy reaches the capsule pods' A2A port by address too in activator.podCIDRs (a woken pod before the policy engine's next sync); podAddressEgress=false keeps the label rule alone", async () => {
    const rule = async (...set: string[]) => named((await render('watchNamespaces={team-a}', ...set)).docs, 'NetworkPolicy', 'x-activator').spec.egress.at(-1);
    const byLabel = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'capsule' } },
    };
    expect(await rule('activator.podCIDRs={10.244.0.0/16,fd00:10:244::/56}')).toEqual({
      to: [byLabel, { ipBlock: { cidr: '10.244.0.0/16' } }, { ipBlock: { cidr: 'fd00:10:244::/56' } }],
      ports: [{ protocol: 'TCP', port: 8080 }],
    });
    expect(await rule('activator.podCIDRs={10.244.0.0/16}', 'activator.podAddressEgress=false')).toEqual({
      to: [byLabel],
      ports: [{ protocol: 'TCP', port: 8080 }],
    });
    // Not a range: the chart's schema refuses it by its path.
    const bad = await helm(['template', 'x', chart, '--set', 'activator.podCIDRs={10.244.0.0}']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('/activator/podCIDRs/0');
  });

  it("without activator.podCIDRs the address rule takes the Nodes' pod CIDRs at install (helm lookup, against the real API server)", async () => {
    const nodes = ['chart-pods-a', 'chart-pods-b'];
    const made = await kubectl(
      ['create', '-f', '-'],
      [
        { apiVersion: 'v1', kind: 'Node', metadata: { name: nodes[0] }, spec: { podCIDR: '10.77.1.0/24', podCIDRs: ['10.77.1.0/24', 'fd00:77:1::/64'] } },
        { apiVersion: 'v1', kind: 'Node', metadata: { name: nodes[1] }, spec: { podCIDR: '10.77.2.0/24' } },
      ]
        .map((n) => JSON.stringify(n))
        .join('\n'),
    );
    expect(made.code, made.stderr).toBe(0);
    try {
      const { docs } = await renderIn('ops', ['--dry-run=server'], 'watchNamespaces={team-a}');
      const cidrs = named(docs, 'NetworkPolicy', 'x-activator')
        .spec.egress.at(-1)
        .to.filter((t: any) => t.ipBlock)
        .map((t: any) => t.ipBlock.cidr);
      // Other tests' Nodes may exist in this API server too: these two nodes' ranges are among them.
      expect(cidrs).toEqual(expect.arrayContaining(['10.77.1.0/24', 'fd00:77:1::/64', '10.77.2.0/24']));
    } finally {
      await kubectl(['delete', 'node', ...nodes, '--ignore-not-found']);
    }
  });

  it('the activator key: one Secret of 64 random letters and digits, mounted into the operator and the activator as a file only their group reads', async () => {
    const { docs } = await render();
    const secret = named(docs, 'Secret', 'x-activator-key');
    expect(secret.metadata.namespace).toBe('ops');
    expect(secret.type).toBe('Opaque');
    expect(Object.keys(secret.data)).toEqual(['key']);
    const key = keyOf(docs);
    expect(key).toMatch(/^[A-Za-z0-9]{64}$/);
    // Both processes' own parser takes it (a short or blank one would stop them: E-OP-074/075).
    const dir = '/var/run/secrets/capsule-operator/activator-key';
    const wiring = {
      env: [{ name: 'CAPSULE_ACTIVATOR_KEY_FILE', value: `${dir}/key` }],
      mounts: [{ name: 'activator-key', mountPath: dir, readOnly: true }],
      volumes: [{ name: 'activator-key', secret: { secretName: 'x-activator-key', defaultMode: 0o440 } }],
      fsGroup: 65532,
      runAsGroup: 65532,
    };
    expect(keyWiring(named(docs, 'Deployment', 'x-activator'))).toEqual(wiring);
    expect(keyWiring(named(docs, 'Deployment', 'x-capsule-operator'))).toEqual(wiring);
    // No key in the environment (checkov CKV_K8S_35): the parser reads the file the env names.
    const files: Record<string, string> = { [`${dir}/key`]: key };
    expect(activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY_FILE: `${dir}/key` }, (p) => files[p]!)).toEqual(Buffer.from(key));
    // Without a release to look up, each render makes a fresh key.
    expect(keyOf((await render()).docs)).not.toBe(key);
  });

  it('an upgrade keeps the activator key of the installed release (helm lookup, against the real API server)', async () => {
    const ns = await newNamespace('chart-key');
    try {
      const kept = 'K33p'.repeat(16);
      await client.create({
        apiVersion: 'v1',
        kind: 'Secret',
        // As release x made it: helm's ownership marks.
        metadata: {
          name: 'x-activator-key',
          namespace: ns,
          labels: { 'app.kubernetes.io/managed-by': 'Helm' },
          annotations: { 'meta.helm.sh/release-name': 'x', 'meta.helm.sh/release-namespace': ns },
        },
        type: 'Opaque',
        data: { key: Buffer.from(kept).toString('base64') },
      });
      // --dry-run=server: helm's lookups read the real API server, as at upgrade.
      const { docs } = await renderIn(ns, ['--dry-run=server']);
      expect(keyOf(docs)).toBe(kept);
    } finally {
      await deleteNamespace(ns);
    }
  });

  it('the API server accepts the activator objects (server-side dry run)', async () => {
    const { docs } = await render();
    const mine = docs.filter(
      (d) =>
        (d.metadata.name === 'x-activator' && ['Deployment', 'Service', 'NetworkPolicy', 'ServiceAccount'].includes(d.kind)) ||
        (d.metadata.name === 'x-activator-key' && d.kind === 'Secret'),
    );
    expect(mine).toHaveLength(5);
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
    expect(keyEnv(named(docs, 'Deployment', 'x-capsule-operator'))).toEqual([]);
  });
});
