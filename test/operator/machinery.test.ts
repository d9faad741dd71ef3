/**
 * The operator's machinery on the real API server: informer watches that end are resumed from the
 * last resourceVersion (no relist, nothing missed), a stale resourceVersion relists, and the HTTP
 * server answers /metrics, /healthz and /readyz.
 */
import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../operator/api/types.ts';
import { LeaderElector } from '../../operator/controller/leader.ts';
import { Informer } from '../../operator/kube/informer.ts';
import { client, deleteNamespace, ensureCrds, eventually, kubeconfig, newNamespace, operator, repoRoot } from './helpers.ts';

let ns = '';
beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-machinery');
});
afterAll(() => deleteNamespace(ns));

const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { t: 'informer' } }, data: { a: '1' } });

describe('informer', () => {
  it('resumes ended watches from the last resourceVersion and misses nothing', async () => {
    const seen: string[] = [];
    const inf = new Informer<KubeObject>(client, 'cm', [`/api/v1/namespaces/${ns}/configmaps`], { labelSelector: 't=informer', timeoutSeconds: 1 });
    inf.on((type, o) => seen.push(`${type} ${o.metadata.name}`));
    await client.create(cm('before'));
    inf.start();
    await inf.waitForSync();
    expect(inf.relists).toBe(1);
    const watchesBefore = client.counts.WATCH ?? 0;
    // The server ends each watch after 1 s; wait until the informer has re-opened it twice.
    await eventually('watch re-opened twice', () => (client.counts.WATCH ?? 0) - watchesBefore >= 2, 30_000, 50);
    await client.create(cm('after'));
    await client.delete(cm('before'));
    await eventually('events seen', () => seen.includes('ADDED after') && seen.includes('DELETED before'));
    expect((client.counts.WATCH ?? 0) - watchesBefore).toBeGreaterThanOrEqual(2);
    expect(inf.relists).toBe(1);
    expect([...inf.store.keys()]).toEqual([`${ns}/after`]);
    await inf.stop();
  });

  it("a write's answer that arrives after the object's delete event does not put it back in the cache", async () => {
    const inf = new Informer<KubeObject>(client, 'cm', [`/api/v1/namespaces/${ns}/configmaps`], { labelSelector: 't=informer', timeoutSeconds: 30 });
    const seen: string[] = [];
    inf.on((type, o) => seen.push(`${type} ${o.metadata.name}`));
    inf.start();
    await inf.waitForSync();
    // The answer to a write made just before the delete (what a status patch returns).
    const answer = await client.create(cm('late-answer'));
    await eventually('added', () => seen.includes('ADDED late-answer'));
    await client.delete(cm('late-answer'));
    await eventually('deleted', () => seen.includes('DELETED late-answer'));
    inf.offer(answer);
    expect(inf.store.has(`${ns}/late-answer`)).toBe(false);
    // A new object under the same name is newer than the delete, and is taken.
    const again = await client.create(cm('late-answer'));
    inf.offer(again);
    expect(inf.store.has(`${ns}/late-answer`)).toBe(true);
    await client.delete(cm('late-answer'));
    await inf.stop();
  });

  it('relists when its resourceVersion is too old, and reports what changed meanwhile', async () => {
    const seen: string[] = [];
    // The API server answers a watch from a compacted resourceVersion with an ERROR event, code 410.
    // Make the first watch do that while a ConfigMap appears and one disappears.
    let first = true;
    const gone = Object.create(client) as typeof client;
    gone.watch = async (path, query, onEvent, signal) => {
      if (!first) return client.watch(path, query, onEvent, signal);
      first = false;
      await client.create(cm('during'));
      await client.delete(cm('after'));
      onEvent('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    };
    const inf = new Informer<KubeObject>(gone, 'cm', [`/api/v1/namespaces/${ns}/configmaps`], { labelSelector: 't=informer', timeoutSeconds: 1 });
    inf.on((type, o) => seen.push(`${type} ${o.metadata.name}`));
    inf.start();
    await inf.waitForSync();
    await eventually('relisted', () => inf.relists >= 2, 20_000);
    await eventually('saw both changes', () => seen.includes('ADDED during') && seen.includes('DELETED after'));
    expect([...inf.store.keys()]).toEqual([`${ns}/during`]);
    await inf.stop();
  });

  it('watches more than ten namespaces on one informer without a listener-leak warning', async () => {
    // Every watch listens to the informer's one abort signal while it is open: 12 at once here,
    // as an operator watching 12 namespaces has. Node warned past 10 ("Possible EventTarget
    // memory leak detected"), once per informer, in every operator's log at start.
    const warnings: Error[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') warnings.push(w);
    };
    process.on('warning', onWarning);
    const paths = Array.from({ length: 12 }, (_, i) => `/api/v1/namespaces/${ns}-w${i}/configmaps`);
    const inf = new Informer<KubeObject>(client, 'cm', paths, { labelSelector: 't=informer' });
    try {
      inf.start();
      await inf.waitForSync();
      // biome-ignore lint/complexity/useLiteralKeys: the informer's private abort, read (bracket access passes tsc) to see its watches open
      const signal = inf['abort'].signal;
      await eventually('12 watches open on the signal', () => getEventListeners(signal, 'abort').length >= 12);
      // A warning is emitted on the next tick after the listener that crossed the bound.
      await new Promise<void>((r) => process.nextTick(r));
      expect(warnings.map((w) => w.message)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await inf.stop();
    }
  });
});

describe('informer index', () => {
  it('answers a key with exactly the cached objects under it, as they are added, relabelled, deleted and relisted away', async () => {
    const labelled = (name: string, owner: string) => ({ ...cm(name), metadata: { ...cm(name).metadata, labels: { t: 'index', owner } } });
    const under = (inf: Informer<KubeObject>, k: string) =>
      inf
        .indexed(k)
        .map((o) => o.metadata.name)
        .sort();
    await client.create(labelled('ix-a1', 'a'));
    await client.create(labelled('ix-b1', 'b'));
    const seen: string[] = [];
    const inf = new Informer<KubeObject>(client, 'cm', [`/api/v1/namespaces/${ns}/configmaps`], {
      labelSelector: 't=index',
      indexBy: (o) => o.metadata.labels?.owner,
    });
    inf.on((type, o) => seen.push(`${type} ${o.metadata.name}`));
    inf.start();
    await inf.waitForSync();
    expect(under(inf, 'a')).toEqual(['ix-a1']);
    await client.create(labelled('ix-a2', 'a'));
    await eventually('a2 indexed', () => under(inf, 'a').length === 2);
    expect(under(inf, 'a')).toEqual(['ix-a1', 'ix-a2']);
    // Relabelled: it moves from one key to the other.
    await client.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/ix-a2`, {
      body: { metadata: { labels: { owner: 'b' } } },
      contentType: 'application/merge-patch+json',
    });
    await eventually('a2 moved', () => under(inf, 'b').length === 2);
    expect(under(inf, 'a')).toEqual(['ix-a1']);
    expect(under(inf, 'b')).toEqual(['ix-a2', 'ix-b1']);
    await client.delete(cm('ix-a1'));
    await eventually('a1 gone', () => seen.includes('DELETED ix-a1'));
    expect(under(inf, 'a')).toEqual([]);
    // Our own forget (after a delete we issued) drops it from the index too.
    inf.forget(`${ns}/ix-b1`);
    expect(under(inf, 'b')).toEqual(['ix-a2']);
    expect(under(inf, 'nobody')).toEqual([]);
    await inf.stop();
  });
});

describe('operator HTTP server', () => {
  it('serves /metrics, /healthz and /readyz', async () => {
    const op = await operator([ns], { httpPort: 0, httpHost: '127.0.0.1' });
    try {
      const base = `http://127.0.0.1:${op.port}`;
      await eventually('ready', async () => (await fetch(`${base}/readyz`)).status === 200);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const text = await (await fetch(`${base}/metrics`)).text();
      for (const m of [
        'capsule_operator_reconcile_total',
        'capsule_operator_reconcile_errors_total',
        'capsule_operator_reconcile_duration_seconds_bucket',
        'capsule_operator_is_leader 1',
      ])
        expect(text).toContain(m);
    } finally {
      await op.stop();
    }
  });
});

describe('leader election without a release', () => {
  it('a crashed leader is replaced once its Lease expires, not before', async () => {
    const o = { namespace: ns, name: 'crash-lease', leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 };
    const a = new LeaderElector(client, { ...o, identity: 'a' });
    const b = new LeaderElector(client, { ...o, identity: 'b' });
    a.start(
      () => {},
      () => {},
    );
    await eventually('a leads', () => a.isLeader);
    b.start(
      () => {},
      () => {},
    );
    // b tries (and is refused) several times while a renews.
    await eventually('b tried three times', () => b.attempts >= 3, 10_000, 20);
    expect(b.isLeader).toBe(false);
    const path = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/crash-lease`;
    await a.stop({ release: false }); // a "crashes": no release, no more renewals
    const last = await client.get<any>(path);
    expect(last.spec.holderIdentity).toBe('a');
    await eventually('b leads', () => b.isLeader, 10_000, 50);
    // Not before the Lease expired: in the Lease's own record, b acquired it a full lease duration
    // (less one retry period of observation slack) after a's last renewal.
    const taken = await client.get<any>(path);
    expect(taken.spec.holderIdentity).toBe('b');
    expect(Date.parse(taken.spec.acquireTime) - Date.parse(last.spec.renewTime)).toBeGreaterThanOrEqual(o.leaseDurationMs - o.retryPeriodMs);
    await b.stop();
    const lease = await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/crash-lease`);
    expect(lease.spec.holderIdentity).toBe('');
  });
});

describe('graceful shutdown', () => {
  it('SIGTERM: the operator process releases its Lease and exits 0', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'operator/main.ts')], {
      cwd: repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        WATCH_NAMESPACES: ns,
        LEADER_ELECTION: 'true',
        LEASE_NAMESPACE: ns,
        LEASE_NAME: 'sigterm',
        POD_NAME: 'op-sigterm',
        HTTP_PORT: '0',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await eventually(
        'holds the lease',
        async () => (await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/sigterm`))?.spec.holderIdentity === 'op-sigterm',
        30_000,
      );
      await eventually('controller started', () => err.includes('controller started'), 30_000);
      const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
      child.kill('SIGTERM');
      expect(await exited, err).toBe(0);
      expect((await client.get<any>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/sigterm`)).spec.holderIdentity).toBe('');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 60_000);
});
