/**
 * The operator at many watched namespaces, on the real API server (issue 38 §3): with 50 watched
 * namespaces a Capsule in the 50th still gets its objects and status (watches once took every
 * socket of the one capped HTTP agent at 8 namespaces, and nothing was ever reconciled); a Capsule
 * outside the watched namespaces is told so with a Warning Event; and /readyz says not ready before
 * the informers sync and while the API server cannot be reached (through a real TCP proxy that
 * the test holds, opens and closes).
 */
import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capsule } from '../../operator/api/types.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import type { Operator } from '../../operator/operator.ts';
import { client, deleteNamespace, ensureCrds, eventually, example, kubeconfig, kubectlOk, newNamespace, operator } from './helpers.ts';

const WATCHED = 50;
let watched: string[] = [];
let outside = '';

beforeAll(async () => {
  await ensureCrds();
  // Numbered, not newNamespace()'s time + random suffix: 50 created in the same millisecond collide.
  const run = Date.now().toString(36);
  watched = await Promise.all(
    Array.from({ length: WATCHED }, async (_, i) => {
      const name = `op-many-${run}-${i + 1}`;
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      return name;
    }),
  );
  outside = await newNamespace('op-unwatched');
}, 180_000);
afterAll(() => Promise.all([...watched, outside].map(deleteNamespace)));

const capsulePath = (ns: string, name: string) => `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/${name}`;
const apply = (ns: string, name: string) =>
  kubectlOk(['apply', '-n', ns, '-f', '-'], example('quickstart.yaml', ns).replace('name: assistant', `name: ${name}`));
const notWatchedEvents = async (ns: string, name: string) =>
  (await client.list<any>(`/api/v1/namespaces/${ns}/events`, { fieldSelector: `involvedObject.name=${name}` })).items.filter(
    (e) => e.reason === 'NamespaceNotWatched',
  );

describe(`an operator watching ${WATCHED} namespaces`, () => {
  let op: Operator;
  beforeAll(async () => {
    // A Capsule outside the watched namespaces from before the operator starts (seen on its first list).
    await apply(outside, 'early');
    // The production path: one cluster-wide Capsule watch (the test's admin may list everywhere).
    op = await operator(watched, { clusterCapsules: true, httpPort: 0, httpHost: '127.0.0.1' });
  });
  afterAll(() => op?.stop());

  it(`reconciles a Capsule in the ${WATCHED}th namespace and is ready once synced`, async () => {
    const last = watched[WATCHED - 1]!;
    await kubectlOk(['create', 'secret', 'generic', 'anthropic-key', '-n', last, '--from-literal=api-key=x']);
    await apply(last, 'assistant');
    const c = await eventually(
      `status of the Capsule in the ${WATCHED}th namespace`,
      async () => {
        const got = await client.get<Capsule>(capsulePath(last, 'assistant'));
        return got?.status?.configHash ? got : undefined;
      },
      120_000,
    );
    expect(c.status?.conditions?.find((x) => x.type === 'Ready')).toBeDefined();
    expect(await client.get(`/apis/apps/v1/namespaces/${last}/deployments/assistant`)).toBeDefined();
    expect(op.controller()!.synced).toBe(true);
    expect((await fetch(`http://127.0.0.1:${op.port}/readyz`)).status).toBe(200);
  }, 180_000);

  it('tells a Capsule outside the watched namespaces, once, with a Warning Event', async () => {
    await apply(outside, 'late');
    for (const name of ['early', 'late']) {
      const [ev] = await eventually(`NamespaceNotWatched event of ${name}`, async () => {
        const evs = await notWatchedEvents(outside, name);
        return evs.length ? evs : undefined;
      });
      const c = await client.get<Capsule>(capsulePath(outside, name));
      expect(ev.type).toBe('Warning');
      expect(ev.involvedObject.uid).toBe(c!.metadata.uid);
      expect(ev.message).toContain(`namespace ${outside} is not watched by capsule-operator`);
      expect(ev.message).toContain('and 40 more');
      expect(ev.message).toMatch(/watchNamespaces.*\[E-OP-030\]$/);
      expect(c!.status).toBeUndefined();
    }
    // A resync tells again only an Event the API server has dropped: still one each.
    await op.controller()!.resyncNow();
    for (const name of ['early', 'late']) expect(await notWatchedEvents(outside, name)).toHaveLength(1);
    expect((await client.list(`/apis/apps/v1/namespaces/${outside}/deployments`)).items).toEqual([]);
  });
});

/** A TCP proxy to the API server that holds new connections until released, and can be closed. */
class HoldingProxy {
  private readonly server = net.createServer((s) => this.accept(s));
  private readonly sockets = new Set<net.Socket>();
  private held: net.Socket[] = [];
  private holding = true;
  constructor(private readonly target: { host: string; port: number }) {}

  listen(port = 0): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port));
    });
  }

  release(): void {
    this.holding = false;
    for (const s of this.held.splice(0)) this.forward(s);
  }

  close(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    for (const s of this.sockets) s.destroy();
    return closed;
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => s.destroy());
  }

  private accept(s: net.Socket): void {
    this.track(s);
    if (this.holding) this.held.push(s);
    else this.forward(s);
  }

  private forward(s: net.Socket): void {
    const up = net.connect(this.target.port, this.target.host);
    this.track(up);
    up.on('close', () => s.destroy());
    s.on('close', () => up.destroy());
    s.pipe(up).pipe(s);
  }
}

describe('/readyz', () => {
  it('is not ready before the informers sync and while the API server cannot be reached', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const server = new URL(kc.getCurrentCluster()!.server);
    const target = { host: server.hostname.replace(/^\[|\]$/g, ''), port: Number(server.port || 443) };
    const proxy = new HoldingProxy(target);
    const port = await proxy.listen();
    const via = new KubeConfig();
    via.loadFromOptions({
      clusters: kc.clusters.map((c) => (c.name === kc.getCurrentCluster()!.name ? { ...c, server: `https://${server.hostname}:${port}` } : c)),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
    const viaProxy = new KubeClient(via);
    const op = await operator([watched[0]!], { client: viaProxy, httpPort: 0, httpHost: '127.0.0.1' });
    let again: HoldingProxy | undefined;
    try {
      const readyz = async () => (await fetch(`http://127.0.0.1:${op.port}/readyz`)).status;
      // Held: no list has been answered, so nothing is synced.
      expect(await readyz()).toBe(503);
      expect(op.controller()!.synced).toBe(false);
      proxy.release();
      await eventually('ready after sync', async () => (await readyz()) === 200);
      // The API server goes away: the caches are still synced, but no request gets through.
      await proxy.close();
      expect(op.controller()!.synced).toBe(true);
      expect(await readyz()).toBe(503);
      // And back on the same address: ready again.
      again = new HoldingProxy(target);
      again.release();
      await again.listen(port);
      await eventually('ready when the API server is back', async () => (await readyz()) === 200);
    } finally {
      await op.stop();
      viaProxy.close();
      await again?.close();
    }
  });
});
