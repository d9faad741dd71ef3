/**
 * The operator (in-process, watching one namespace) against the real API server:
 * kubectl apply of the examples → the expected objects; status and events; steady state writes
 * nothing; spec change and Secret rotation roll the pods; missing Secret/Hook reported;
 * stray labelled objects pruned; delete → everything gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capsule, Hook, KubeObject } from '../../operator/api/types.ts';
import { ANNOTATION_CONFIG_HASH } from '../../operator/translate/builders/common.ts';
import type { Operator } from '../../operator/operator.ts';
import { covers } from '../../operator/reconcile/compare.ts';
import { translate } from '../../operator/translate/index.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, example, kubectl, kubectlOk, newNamespace, operator, resynced } from './helpers.ts';

let ns = '';
let op: Operator;

const capsulePath = (name: string) => `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/${name}`;
const get = (path: string) => client.get<any>(path);
const deployment = (name: string) => get(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
const templateHash = async (name: string): Promise<string | undefined> => (await deployment(name))?.spec.template.metadata.annotations[ANNOTATION_CONFIG_HASH];
const condition = (c: Capsule | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);

async function apply(yaml: string): Promise<void> {
  await kubectlOk(['apply', '-n', ns, '-f', '-'], yaml);
}

async function ownedObjects(name: string): Promise<KubeObject[]> {
  const sel = `murmur.io/capsule=${name}`;
  const paths = [
    `/api/v1/namespaces/${ns}/serviceaccounts`,
    `/api/v1/namespaces/${ns}/configmaps`,
    `/api/v1/namespaces/${ns}/services`,
    `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`,
    `/apis/apps/v1/namespaces/${ns}/deployments`,
  ];
  const kinds = ['ServiceAccount', 'ConfigMap', 'Service', 'NetworkPolicy', 'Deployment'];
  const lists = await Promise.all(paths.map((p) => client.list<KubeObject>(p, { labelSelector: sel })));
  return lists.flatMap((l, i) => l.items.map((o) => ({ ...o, kind: kinds[i]! })));
}

async function writes(): Promise<number> {
  return op.metrics.total('capsule_operator_writes_total');
}

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-reconcile');
  op = await operator([ns], { resyncMs: 500 });
  await eventually('operator ready', () => op.ready());
});

afterAll(async () => {
  await op?.stop();
  await deleteNamespace(ns);
});

describe('reconcile on a real API server', () => {
  it('kubectl apply of the examples creates the expected objects', async () => {
    await apply(example('secret.yaml', ns));
    await apply(example('hooks.yaml', ns));
    await apply(example('researcher.yaml', ns));
    await apply(example('writer.yaml', ns));

    const researcher = await eventually('researcher status', async () => {
      const c = await get(capsulePath('researcher'));
      return c?.status?.configHash ? (c as Capsule) : undefined;
    });
    await eventually('writer status', async () => (await get(capsulePath('writer')))?.status?.configHash);
    // The quickstart needs nothing but the image: admitted, applied, and no problem reported.
    await apply(example('quickstart.yaml', ns));
    const quick = await eventually('quickstart status', async () => {
      const c = (await get(capsulePath('assistant'))) as Capsule | undefined;
      return c?.status?.configHash ? c : undefined;
    });
    expect(condition(quick, 'Degraded')).toMatchObject({ status: 'False', reason: 'AsExpected' });
    // What is live covers what translate says for the same inputs.
    const hooks: Record<string, Hook> = {};
    for (const n of ['shell-guard', 'summarizer']) hooks[n] = await get(`/apis/murmur.io/v1alpha1/namespaces/${ns}/hooks/${n}`);
    const secret = await get(`/api/v1/namespaces/${ns}/secrets/anthropic-key`);
    const want = translate({
      capsule: researcher,
      hooks,
      secrets: { 'anthropic-key': { name: 'anthropic-key', resourceVersion: secret.metadata.resourceVersion, keys: Object.keys(secret.data) } },
      callers: [`${ns}/writer`],
      capsulePorts: { [`${ns}/researcher`]: 8080, [`${ns}/writer`]: 80 },
      options: defaultOptions(),
    });
    expect(want.problems).toEqual([]);
    const live = await eventually('all six objects', async () => {
      const objs = await ownedObjects('researcher');
      return objs.length === 6 ? objs : undefined;
    });
    for (const w of want.objects) {
      const l = await eventually(`${w.kind} ${w.metadata.name} up to date`, async () => {
        const all = await ownedObjects('researcher');
        const found = all.find((o) => o.kind === w.kind && o.metadata.name === w.metadata.name && covers({ ...o, apiVersion: w.apiVersion }, w));
        return found;
      });
      expect(l.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Capsule', name: 'researcher', uid: researcher.metadata.uid, controller: true });
    }
    expect(live.map((o) => o.metadata.name).sort()).toEqual([
      'researcher',
      'researcher',
      'researcher',
      'researcher-egress',
      'researcher-ingress',
      'researcher-manifest',
    ]);

    // The writer's manifest names the researcher by its Service URL; the researcher admits the writer.
    const cm = await get(`/api/v1/namespaces/${ns}/configmaps/writer-manifest`);
    expect(cm.data['murmur.yaml']).toContain(`http://researcher.${ns}.svc.cluster.local:8080`);
    const ing = await get(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/researcher-ingress`);
    expect(ing.spec.ingress[0].from[0].podSelector.matchLabels['murmur.io/capsule']).toBe('writer');
    const dep = await deployment('researcher');
    const ctr = dep.spec.template.spec.containers[0];
    expect(ctr.env.find((e: any) => e.name === 'MURMUR_INFERENCE_API_KEY').valueFrom.secretKeyRef).toEqual({ name: 'anthropic-key', key: 'api-key' });
    expect(ctr.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    const status = (await get(capsulePath('researcher'))).status;
    expect(status.a2aUrl).toBe(`http://researcher.${ns}.svc.cluster.local:8080`);
    expect(status.observedGeneration).toBe(researcher.metadata.generation);
  });

  it('reports Ready when the pods are (Progressing until then)', async () => {
    // Without pods that become ready (no kwok node, no controller-manager) this cannot be shown:
    // say so and fail rather than pass on something else.
    if (!cluster.podsBecomeReady)
      throw new Error('this cluster runs no pods to readiness (kwok, scheduler and controller-manager are needed): Ready cannot be tested');
    const before = await get(capsulePath('researcher'));
    if (condition(before, 'Ready')?.status !== 'True') expect(condition(before, 'Progressing')?.status).toBe('True');
    const c = await eventually(
      'researcher Ready',
      async () => {
        const x = await get(capsulePath('researcher'));
        return condition(x, 'Ready')?.status === 'True' ? (x as Capsule) : undefined;
      },
      100_000,
    );
    expect(c.status?.readyReplicas).toBe(1);
    expect(condition(c, 'Progressing')).toMatchObject({ status: 'False', reason: 'RolloutComplete' });
    expect(condition(c, 'Degraded')).toMatchObject({ status: 'False', reason: 'AsExpected' });
    const out = await kubectl(['get', 'cap', '-n', ns]);
    // STATE is status.phase (the sleep controller writes it: Ready once a pod is).
    expect(out.stdout).toMatch(/NAME\s+STATE\s+READY\s+MODEL\s+REPLICAS\s+AVAILABLE\s+TOKENS\s+AGE/);
    expect(out.stdout, out.stdout).toMatch(/researcher\s+Ready\s+True\s+claude-sonnet-4-5\s+1\s+1/);
  }, 120_000);

  it('steady state: resyncs write nothing', async () => {
    // Quiet = a full resync pass (every Capsule and Hook reconciled once) that wrote nothing.
    await eventually(
      'quiet',
      async () => {
        const a = await writes();
        await resynced(op.controller()!);
        return (await writes()) === a;
      },
      60_000,
      10,
    );
    const byVerb = async () =>
      Object.fromEntries(
        await Promise.all(['apply', 'delete', 'status', 'event'].map(async (v) => [v, await op.metrics.total('capsule_operator_writes_total', { verb: v })])),
      );
    const before = await byVerb();
    const deploymentsRv = async () =>
      (await client.list<any>(`/apis/apps/v1/namespaces/${ns}/deployments`)).items.map((d) => d.metadata.resourceVersion).join();
    const depsBefore = await deploymentsRv();
    // Deployments change status as kwok's pods move; everything else must not change at all.
    const rvs = async () =>
      (await ownedObjects('researcher'))
        .filter((o) => o.kind !== 'Deployment')
        .map((o) => o.metadata.resourceVersion)
        .sort();
    const rvBefore = await rvs();
    const reconcilesBefore = await op.metrics.total('capsule_operator_reconcile_total');
    // The periodic resync (every 500 ms here): wait for three more full passes it completes.
    const passes = op.controller()!.resyncsCompleted;
    await eventually('three periodic resync passes', () => op.controller()!.resyncsCompleted >= passes + 3, 60_000, 50);
    expect(await op.metrics.total('capsule_operator_reconcile_total')).toBeGreaterThan(reconcilesBefore + 4);
    const after = await byVerb();
    expect({ ...after, status: 0, event: 0 }).toEqual({ ...before, status: 0, event: 0 });
    // Status (and a Normal event with a transition) is written only when something it reports
    // changed (here: only a Deployment's status can).
    if ((await deploymentsRv()) === depsBefore) expect([after.status, after.event]).toEqual([before.status, before.event]);
    expect(await rvs()).toEqual(rvBefore);
  });

  it('a spec change rolls the pods', async () => {
    const h0 = await templateHash('researcher');
    await kubectlOk(['patch', 'capsule', 'researcher', '-n', ns, '--type', 'merge', '-p', '{"spec":{"inference":{"model":"claude-opus-4-1"}}}']);
    const h1 = await eventually('new hash', async () => {
      const h = await templateHash('researcher');
      return h && h !== h0 ? h : undefined;
    });
    expect((await get(`/api/v1/namespaces/${ns}/configmaps/researcher-manifest`)).data['murmur.yaml']).toContain('model: claude-opus-4-1');
    if (cluster.controllerManager) {
      await eventually('a ReplicaSet for the new template', async () => {
        const rs = await client.list<any>(`/apis/apps/v1/namespaces/${ns}/replicasets`, { labelSelector: 'murmur.io/capsule=researcher' });
        return rs.items.some((r) => r.spec.template.metadata.annotations[ANNOTATION_CONFIG_HASH] === h1) && rs.items.length >= 2;
      });
    }
    // Scaling does not roll (to 0 and back: more than one replica needs the shared store).
    await kubectlOk(['patch', 'capsule', 'researcher', '-n', ns, '--type', 'merge', '-p', '{"spec":{"replicas":0}}']);
    await eventually('scaled', async () => (await deployment('researcher'))?.spec.replicas === 0);
    expect(await templateHash('researcher')).toBe(h1);
    await kubectlOk(['patch', 'capsule', 'researcher', '-n', ns, '--type', 'merge', '-p', '{"spec":{"replicas":1}}']);
    await eventually('scaled back', async () => (await deployment('researcher'))?.spec.replicas === 1);
    expect(await templateHash('researcher')).toBe(h1);
  });

  it('rotating the API key Secret rolls the pods', async () => {
    const h0 = await templateHash('researcher');
    await kubectlOk(['patch', 'secret', 'anthropic-key', '-n', ns, '--type', 'merge', '-p', '{"stringData":{"api-key":"rotated"}}']);
    await eventually('new hash after rotation', async () => {
      const h = await templateHash('researcher');
      return h && h !== h0;
    });
  });

  it('a Hook change rolls the capsules that use it', async () => {
    const h0 = await templateHash('researcher');
    await kubectlOk(['patch', 'hook', 'summarizer', '-n', ns, '--type', 'merge', '-p', '{"spec":{"artifact":{"version":"1.3.0"}}}']);
    await eventually('new hash after hook change', async () => {
      const h = await templateHash('researcher');
      return h && h !== h0;
    });
  });

  it('a missing Secret or Hook is reported (status and Event) and fixed when it appears', async () => {
    await apply(`apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: orphan }
spec:
  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]
  inference: { driver: { artifact: drv }, model: m, endpoint: 'https://api.anthropic.com', apiKeySecretRef: { name: later-key, key: k } }
  hooks: [{ name: later-hook }]
`);
    const c = await eventually('orphan blocked', async () => {
      const x = await get(capsulePath('orphan'));
      return condition(x, 'Ready')?.reason === 'MissingSecret' ? (x as Capsule) : undefined;
    });
    expect(condition(c, 'Degraded')?.message).toContain("Hook 'later-hook' (spec.hooks[0]) not found");
    expect(await ownedObjects('orphan')).toEqual([]);
    const events = await eventually('events', async () => {
      const ev = await client.list<any>(`/api/v1/namespaces/${ns}/events`, { fieldSelector: 'involvedObject.name=orphan' });
      const reasons = ev.items.map((e) => e.reason);
      return reasons.includes('MissingSecret') && reasons.includes('MissingHook') ? ev.items : undefined;
    });
    expect(events.every((e) => e.type === 'Warning' && e.involvedObject.kind === 'Capsule')).toBe(true);
    // Steady while blocked: no new events and no status writes for it (other capsules may still
    // be rolling out from the tests above, so the global write counter is not the measure here).
    const rv = (await get(capsulePath('orphan'))).metadata.resourceVersion;
    const nEvents = events.length;
    await resynced(op.controller()!, 3);
    expect((await get(capsulePath('orphan'))).metadata.resourceVersion).toBe(rv);
    expect((await client.list<any>(`/api/v1/namespaces/${ns}/events`, { fieldSelector: 'involvedObject.name=orphan' })).items.length).toBe(nEvents);

    await kubectlOk(['create', 'secret', 'generic', 'later-key', '-n', ns, '--from-literal=k=v']);
    await eventually('only the hook is missing now', async () => condition(await get(capsulePath('orphan')), 'Ready')?.reason === 'MissingHook');
    await apply(`apiVersion: murmur.io/v1alpha1
kind: Hook
metadata: { name: later-hook }
spec: { artifact: { name: later-hook, version: 1.0.0 } }
`);
    await eventually('orphan applied', async () => (await ownedObjects('orphan')).length === 6);
  });

  it('a Hook’s status says its contract is accepted and lists the Capsules that use it, as they come and go', async () => {
    const hookPath = (name: string) => `/apis/murmur.io/v1alpha1/namespaces/${ns}/hooks/${name}`;
    await apply(`apiVersion: murmur.io/v1alpha1
kind: Hook
metadata: { name: audit }
spec: { artifact: { name: audit, version: 1.0.0 }, binding: on-tool-call, commit_policy: deny }
`);
    const unused = await eventually('unreferenced hook status', async () => {
      const h = await get(hookPath('audit'));
      return h?.status?.conditions?.length ? (h as Hook) : undefined;
    });
    expect(unused.status).toMatchObject({ observedGeneration: unused.metadata.generation, usedBy: [], usedByCount: 0 });
    expect(unused.status!.conditions!.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Accepted', 'True', 'ContractValid'],
      ['InUse', 'False', 'Unreferenced'],
    ]);
    const capsuleUsing = (name: string) => `apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: ${name} }
spec:
  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]
  inference: { driver: { artifact: drv }, model: m, endpoint: 'https://api.anthropic.com' }
  hooks: [{ name: audit }]
`;
    await apply(`${capsuleUsing('user-b')}---\n${capsuleUsing('user-a')}`);
    const used = await eventually('both users listed', async () => {
      const h = (await get(hookPath('audit'))) as Hook;
      return h.status?.usedByCount === 2 ? h : undefined;
    });
    expect(used.status!.usedBy).toEqual(['user-a', 'user-b']);
    expect(used.status!.conditions!.find((c) => c.type === 'InUse')).toMatchObject({
      status: 'True',
      reason: 'Referenced',
      message: 'used by 2 Capsules: user-a, user-b',
    });
    // Accepted did not transition, so its time is kept.
    expect(used.status!.conditions!.find((c) => c.type === 'Accepted')!.lastTransitionTime).toBe(
      unused.status!.conditions!.find((c) => c.type === 'Accepted')!.lastTransitionTime,
    );

    // A spec change is observed (generation), a status-only resync writes nothing.
    await kubectlOk(['patch', 'hook', 'audit', '-n', ns, '--type', 'merge', '-p', '{"spec":{"artifact":{"version":"1.1.0"}}}']);
    const patched = await eventually('new generation observed', async () => {
      const h = (await get(hookPath('audit'))) as Hook;
      return h.status?.observedGeneration === h.metadata.generation && h.metadata.generation! > unused.metadata.generation! ? h : undefined;
    });
    await resynced(op.controller()!, 3);
    expect(((await get(hookPath('audit'))) as Hook).metadata.resourceVersion).toBe(patched.metadata.resourceVersion);

    await kubectlOk(['delete', 'capsule', 'user-a', 'user-b', '-n', ns, '--wait=false']);
    await eventually('unreferenced again', async () => {
      const h = (await get(hookPath('audit'))) as Hook;
      return h.status?.usedByCount === 0 && h.status.conditions?.find((c) => c.type === 'InUse')?.status === 'False';
    });
  });

  it('prunes objects labelled as ours that are no longer desired', async () => {
    const owner = await get(capsulePath('orphan'));
    await client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'orphan-stale',
        namespace: ns,
        labels: { 'app.kubernetes.io/managed-by': 'capsule-operator', 'murmur.io/capsule': 'orphan' },
        ownerReferences: [{ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', name: 'orphan', uid: owner.metadata.uid, controller: true }],
      },
      data: { x: '1' },
    });
    await eventually('stale object pruned', async () => !(await get(`/api/v1/namespaces/${ns}/configmaps/orphan-stale`)));
    expect((await ownedObjects('orphan')).length).toBe(6);
  });

  it('repairs drift on fields it owns', async () => {
    await kubectlOk(['scale', 'deployment', 'orphan', '-n', ns, '--replicas=4']);
    await kubectlOk(['annotate', 'networkpolicy', 'orphan-egress', '-n', ns, 'x=y']);
    await kubectlOk(['patch', 'networkpolicy', 'orphan-egress', '-n', ns, '--type', 'merge', '-p', '{"spec":{"policyTypes":["Ingress","Egress"]}}']);
    await eventually('replicas restored', async () => (await deployment('orphan')).spec.replicas === 1);
    await eventually(
      'policy restored',
      async () => (await get(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/orphan-egress`)).spec.policyTypes.join() === 'Egress',
    );
  });

  it('deleting a Capsule removes everything it owned', async () => {
    await kubectlOk(['delete', 'capsule', 'orphan', '-n', ns, '--wait=true']);
    await eventually('all gone', async () => (await ownedObjects('orphan')).length === 0);
  });
});
