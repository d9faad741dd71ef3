/**
 * Crash and failover: an operator child process SIGKILLed mid-reconcile, then a fresh operator
 * converges with nothing lost or duplicated; two replicas elect exactly one leader, only the
 * leader writes, and a standby takes over when the leader stops.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../operator/api/types.ts';
import type { Operator } from '../../operator/operator.ts';
import { client, deleteNamespace, ensureCrds, eventually, kubeconfig, kubectl, kubectlOk, newNamespace, operator, repoRoot } from './helpers.ts';

const N = 12;
let ns = '';
const children: ChildProcess[] = [];
const ops: Operator[] = [];

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-resilience');
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const o of ops) await o.stop();
  await deleteNamespace(ns);
});

function capsuleYaml(i: number): string {
  return `apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: c${i} }
spec:
  capabilities: { network: { allow: ["capsule://${ns}/c${(i + 1) % N}", "api.example.com:443"] } }
---
`;
}

async function labelled(kind: string, path: string): Promise<KubeObject[]> {
  const l = await client.list<KubeObject>(path, { labelSelector: 'app.kubernetes.io/managed-by=capsule-operator' });
  return l.items.map((o) => ({ ...o, kind }));
}

async function inventory(): Promise<KubeObject[]> {
  const p = (x: string) => `/api/v1/namespaces/${ns}/${x}`;
  return [
    ...(await labelled('ServiceAccount', p('serviceaccounts'))),
    ...(await labelled('ConfigMap', p('configmaps'))),
    ...(await labelled('Service', p('services'))),
    ...(await labelled('NetworkPolicy', `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`)),
    ...(await labelled('Deployment', `/apis/apps/v1/namespaces/${ns}/deployments`)),
  ];
}

describe('operator killed mid-reconcile', () => {
  it('converges after restart with nothing lost or duplicated', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'operator/main.ts')], {
      cwd: repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        WATCH_NAMESPACES: ns,
        LEADER_ELECTION: 'false',
        HTTP_PORT: '0',
        WORKERS: '2',
        CAPSULE_OPERATOR_WRITE_DELAY_MS: '150',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const r = await kubectl(['apply', '-n', ns, '-f', '-'], Array.from({ length: N }, (_, i) => capsuleYaml(i)).join(''));
    expect(r.code, r.stderr).toBe(0);
    // Kill it once some, but not all, objects exist.
    const partial = await eventually(
      'some objects written',
      async () => {
        const inv = await inventory();
        return inv.length >= 8 ? inv.length : undefined;
      },
      60_000,
      50,
    );
    child.kill('SIGKILL');
    await new Promise((res) => child.once('exit', res));
    const afterKill = (await inventory()).length;
    expect(afterKill, stderr).toBeLessThan(N * 6);
    expect(partial).toBeGreaterThan(0);

    const op = await operator([ns], { workers: 4 });
    ops.push(op);
    await eventually('converged', async () => (await inventory()).length === N * 6, 90_000, 200);
    const inv = await inventory();
    const keys = inv.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (let i = 0; i < N; i++) {
      for (const k of [
        `ServiceAccount/c${i}`,
        `ConfigMap/c${i}-manifest`,
        `Service/c${i}`,
        `NetworkPolicy/c${i}-egress`,
        `NetworkPolicy/c${i}-ingress`,
        `Deployment/c${i}`,
      ])
        expect(keys).toContain(k);
    }
    // Every capsule has a status, and each ingress policy admits exactly its one caller.
    for (let i = 0; i < N; i++) {
      const c = await eventually(
        `c${i} status`,
        async () => (await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/c${i}`))?.status?.configHash && true,
      );
      expect(c).toBe(true);
      const ing = inv.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === `c${i}-ingress`) as any;
      expect(ing.spec.ingress[0].from.map((f: any) => f.podSelector.matchLabels['murmur.io/capsule'])).toEqual([`c${(i + N - 1) % N}`]);
    }
    await op.stop();
    ops.splice(ops.indexOf(op), 1);
  });
});

describe('leader election', () => {
  it('two replicas: one leader; only it writes; the standby takes over at once when the leader shuts down', async () => {
    // A long lease: a takeover well inside it shows the leader released the Lease on shutdown.
    const lease = { namespace: ns, name: 'capsule-operator-test', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 300 };
    const a = await operator([ns], { leaderElection: { ...lease, identity: 'replica-a' } });
    ops.push(a);
    await eventually('a leads', () => a.isLeader());
    const b = await operator([ns], { leaderElection: { ...lease, identity: 'replica-b' } });
    ops.push(b);
    // b campaigns and is refused while a holds the Lease: wait for a few of b's attempts.
    await eventually('b campaigned', () => (b.elector()?.attempts ?? 0) >= 3, 30_000, 50);
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    expect(b.controller()).toBeUndefined();
    const l = await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/capsule-operator-test`);
    expect(l.spec.holderIdentity).toBe('replica-a');

    // The leader reconciles a new capsule; the standby writes nothing.
    await kubectlOk(['apply', '-n', ns, '-f', '-'], `apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: led }\nspec: {}\n`);
    await eventually('led reconciled', async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/led`)) !== undefined);
    expect(await b.metrics.total('capsule_operator_writes_total')).toBe(0);

    // The leader stops (graceful: it releases the Lease); the standby takes over.
    const held = await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/capsule-operator-test`);
    await a.stop();
    ops.splice(ops.indexOf(a), 1);
    // Released on shutdown: the Lease has no holder (or b already), so b need not wait it out.
    const released = await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/capsule-operator-test`);
    expect(['', 'replica-b']).toContain(released.spec.holderIdentity);
    await eventually('b leads', () => b.isLeader(), 10_000, 50);
    // In the Lease's own record b took it well inside the 15 s a crashed holder would have kept it.
    const took = await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/capsule-operator-test`);
    expect(Date.parse(took.spec.acquireTime) - Date.parse(held.spec.renewTime)).toBeLessThan(lease.leaseDurationMs);
    await kubectlOk(['apply', '-n', ns, '-f', '-'], `apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: led2 }\nspec: {}\n`);
    await eventually('led2 reconciled by b', async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/led2`)) !== undefined);
    expect(await b.metrics.total('capsule_operator_writes_total')).toBeGreaterThan(0);
    const l2 = await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/capsule-operator-test`);
    expect(l2.spec.holderIdentity).toBe('replica-b');
    expect(l2.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
  });
});
