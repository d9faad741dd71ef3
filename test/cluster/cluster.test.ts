// Smoke test of the test cluster (test/cluster/global-setup.ts): a real kube-apiserver, reached with
// @kubernetes/client-node 1.4 and with kubectl/helm.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, PatchStrategy, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { helmPath, kubectlPath } from './harness.ts';

const run = promisify(execFile);
const kubeconfig = inject('kubeconfig');
const cluster = inject('cluster');
const ns = `cluster-smoke-${Date.now().toString(36)}`;

const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const objects = KubernetesObjectApi.makeApiClient(kc);

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(kubectlPath(), args, { env: { ...process.env, KUBECONFIG: kubeconfig } });
  return stdout;
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out: ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const statusOf = (e: unknown) => (e instanceof ApiException ? e.code : undefined);

describe('test cluster', () => {
  beforeAll(async () => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
  });
  afterAll(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => {});
  });

  it('hands the kubeconfig to the test workers (inject and KUBECONFIG)', () => {
    expect(kubeconfig).toBeTruthy();
    expect(process.env.KUBECONFIG).toBe(kubeconfig);
  });

  it('serves a stamped Kubernetes version to kubectl', async () => {
    const v = JSON.parse(await kubectl('version', '-o', 'json'));
    expect(v.serverVersion.major).toBe('1');
    if (!cluster.external) {
      expect(v.serverVersion.gitVersion).toMatch(/^v1\.3[67]\.\d+$/);
      expect(v.clientVersion.gitVersion).toBe(v.serverVersion.gitVersion);
    }
  });

  it('creates a ConfigMap with client-node and reads it back with kubectl', async () => {
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'plain' }, data: { hello: 'world' } } });
    const got = JSON.parse(await kubectl('get', 'configmap', 'plain', '-n', ns, '-o', 'json')) as V1ConfigMap;
    expect(got.data).toEqual({ hello: 'world' });
  });

  it('supports server-side apply (application/apply-patch+yaml, fieldManager, conflicts, force)', async () => {
    const spec = (value: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', namespace: ns }, data: { key: value } });
    const created = (await objects.patch(spec('one'), undefined, undefined, 'capsule-a', undefined, PatchStrategy.ServerSideApply)) as V1ConfigMap;
    expect(created.data).toEqual({ key: 'one' });
    expect(created.metadata?.managedFields?.map((f) => [f.manager, f.operation])).toContainEqual(['capsule-a', 'Apply']);

    // Same manager, new value: no conflict.
    await objects.patch(spec('two'), undefined, undefined, 'capsule-a', undefined, PatchStrategy.ServerSideApply);
    // Another manager claiming the same field conflicts (409) unless it forces.
    const conflict = await objects
      .patch(spec('three'), undefined, undefined, 'capsule-b', undefined, PatchStrategy.ServerSideApply)
      .then(() => undefined, statusOf);
    expect(conflict).toBe(409);
    const forced = await objects.patch(spec('three'), undefined, undefined, 'capsule-b', true, PatchStrategy.ServerSideApply);
    expect((forced as V1ConfigMap).data).toEqual({ key: 'three' });

    // Apply without a fieldManager is rejected by the real server.
    const missing = await objects
      .patch(spec('four'), undefined, undefined, undefined, undefined, PatchStrategy.ServerSideApply)
      .then(() => undefined, statusOf);
    expect(missing).toBe(422);
  });

  it.skipIf(!cluster.podsBecomeReady)('runs a Deployment to ready replicas (scheduler + controller-manager + kwok)', async () => {
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.invalid/capsule/web:1' }] },
          },
        },
      },
    });
    const d = await eventually('deployment web has 2 ready replicas', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
      return (d.status?.readyReplicas ?? 0) === 2 ? d : undefined;
    });
    expect(d.status?.availableReplicas).toBe(2);
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=web' });
    expect(pods.items).toHaveLength(2);
    for (const p of pods.items) {
      expect(p.status?.phase).toBe('Running');
      if (cluster.nodeName) expect(p.spec?.nodeName).toBe(cluster.nodeName);
    }
  });

  it.skipIf(!cluster.controllerManager)('garbage-collects an owned ConfigMap after its owner is deleted', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid!, blockOwnerDeletion: true }],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: ns });
    await eventually('owned ConfigMap is garbage-collected', async () => {
      const status = await core.readNamespacedConfigMap({ name: 'owned', namespace: ns }).then(() => 200, statusOf);
      return status === 404;
    });
  });

  it.skipIf(cluster.external)('has a working helm binary', async () => {
    const { stdout } = await run(helmPath(), ['version', '--short']);
    expect(stdout).toMatch(/^v4\.\d+\.\d+/);
    const list = await run(helmPath(), ['list', '--all-namespaces', '-o', 'json'], { env: { ...process.env, KUBECONFIG: kubeconfig } });
    expect(JSON.parse(list.stdout)).toEqual([]);
  });
});
