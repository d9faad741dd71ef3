/**
 * The activator (operator/activator/) against the real API server of the test cluster: Capsules,
 * their rendered-style ingress NetworkPolicies and EndpointSlices created there, the activator's
 * informers reading them, TokenReviews and Events real. Behind it, real servers on 127.0.0.1: the
 * runtime's A2A server (JSON-RPC and gRPC) and a plain node:http server for a server-sent-events
 * stream. The caller is 127.0.0.1, no pod: the policies admit or refuse it by ipBlock (pod-label
 * matching is table-tested on the pure function, test/operator/unit/activator-fences.test.ts).
 * API keys: a Capsule's status carries the digests the operator would publish for its Secret
 * (runtime/contracts/api-key.ts), and the capsule behind it reads the same Secret as a mounted folder.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Activator, startActivator } from '../../operator/activator/activator.ts';
import { KubeConfig } from '@kubernetes/client-node';
import { type A2AServer, createAuthenticator } from '../../runtime/a2a/server/server.ts';
import { tokenReviewVerifier } from '../../runtime/a2a/server/token-review.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secretApiKeyDigests } from '../../runtime/contracts/api-key.ts';
import { readApiKeys } from '../../runtime/a2a/server/auth-config.ts';
import { closeAll, msg10, serve } from '../a2a/helpers.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { client, deleteNamespace, ensureCrds, eventually, helm, kubeconfig, kubectl, newNamespace, repoRoot } from './helpers.ts';

let NS = '';
let activator: Activator;
let short: Activator;
const log: string[] = [];
const CARD = JSON.stringify({ name: 'sleeper', version: '1.0.0', description: 'recorded before sleep', url: 'http://x/' });

const a2aUrl = (name: string) => `http://${name}.${NS}.svc.cluster.local:8080/`;
const hostOf = (name: string) => `${name}.${NS}.svc.cluster.local:8080`;

/** The activator key the operator made the digests with, and the activators' own. */
const ACTIVATOR_KEY = Buffer.from('test-activator-key-0123456789abcdefghijklmnop');
/** API keys as the Capsules' Secrets hold them (entry → key). */
const KEYS = { keyed: { 'ci-bot': 'keyed-ci-bot-key-0123456789abcdef' }, 'keyed-other': { 'ci-bot': 'other-ci-bot-key-0123456789abcdef' } };
const secretData = (keys: Record<string, string>) => Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(`${v}\n`).toString('base64')]));

async function capsule(name: string, opts: { anonymous?: boolean; card?: boolean; admit127?: boolean; apiKeys?: Record<string, string> } = {}): Promise<void> {
  await client.create({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: NS },
    spec: {
      artifacts: [{ name: 'drv', runtime: 'driver', version: '1.0.0' }],
      inference: { driver: { artifact: 'drv' }, model: 'm', endpoint: 'https://api.anthropic.com' },
      ...(opts.anonymous ? { a2a: { auth: { anonymous: true } } } : {}),
      ...(opts.apiKeys ? { a2a: { auth: { apiKeys: { secretName: `${name}-keys` } } } } : {}),
    },
  });
  await client.mergePatchStatus(
    { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name, namespace: NS } },
    // status.a2aUrl as the operator writes it: without the trailing slash of the runtime's --public-url
    {
      phase: 'Sleeping',
      a2aUrl: a2aUrl(name).replace(/\/$/, ''),
      sleep: {
        since: new Date().toISOString(),
        ...(opts.card === false ? {} : { agentCard: CARD }),
        // What the operator publishes for the Capsule's Secret (controller/secret-info.ts).
        ...(opts.apiKeys ? { apiKeyDigests: secretApiKeyDigests(ACTIVATOR_KEY, secretData(opts.apiKeys)) } : {}),
      },
    },
  );
  // As the operator renders it (operator/translate/builders/networkpolicy.ts), with the caller's address as the peer.
  await client.create({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `${name}-ingress`, namespace: NS, labels: { 'app.kubernetes.io/managed-by': 'capsule-operator' } },
    spec: {
      podSelector: { matchLabels: { 'murmur.io/capsule': name } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from:
            opts.admit127 === false
              ? [{ podSelector: { matchLabels: { role: 'caller' } } }, { ipBlock: { cidr: '10.0.0.0/8' } }]
              : [{ ipBlock: { cidr: '127.0.0.1/32' } }],
          ports: [{ protocol: 'TCP', port: 8080 }],
        },
        { ports: [{ protocol: 'TCP', port: 9090 }] },
      ],
    },
  });
  // The operator's slice of a sleep-enabled Capsule, pointing its Service at the activator.
  await slice(`${name}-activator`, name, 'capsule-operator.murmur.dev', '10.255.0.1', 8012);
}

async function slice(name: string, service: string, managedBy: string, ip: string, port: number, ready = true): Promise<void> {
  await client.create({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: NS, labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': managedBy } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [ip], conditions: { ready } }],
    ports: [{ name: 'a2a', port, protocol: 'TCP' }],
  });
}

/**
 * The capsule pod is ready: a slice the EndpointSlice controller would keep, at a real server. The
 * API server refuses loopback addresses in a slice, so the pod's address is POD_IP and the
 * activator dials it at 127.0.0.1 (its `dial` seam), on the slice's port.
 */
const POD_IP = '10.77.0.1';
const podReady = (service: string, port: number) => slice(`${service}-pod`, service, 'endpointslice-controller.k8s.io', POD_IP, port);
const dial = (e: { ip: string; port: number }) => (e.ip === POD_IP ? { ip: '127.0.0.1', port: e.port } : e);

async function wakeEvents(name: string): Promise<any[]> {
  const r = await client.list<any>(`/api/v1/namespaces/${NS}/events`, { fieldSelector: `reason=WakeRequested,involvedObject.name=${name}` });
  return r.items;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function send(a: Activator, host: string, o: { method?: string; path?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: a.port, method: o.method ?? 'POST', path: o.path ?? '/', headers: { host, 'content-type': 'application/json', ...o.headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

const rpcBody = (id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method: 'SendMessage', params: { message: msg10('wake up') } });

const heldNow = (a: Activator) => a.metrics.total('capsule_activator_requests_held');

beforeAll(async () => {
  await ensureCrds();
  NS = await newNamespace('activator');
  await Promise.all([
    capsule('cap'),
    capsule('refused', { admit127: false }),
    capsule('open', { anonymous: true }),
    capsule('nocard', { anonymous: true, card: false }),
    capsule('stream', { anonymous: true }),
    capsule('grpc', { anonymous: true }),
    capsule('sleepy', { anonymous: true }),
    capsule('drain', { anonymous: true }),
    capsule('lagging', { anonymous: true }),
    capsule('starting', { anonymous: true }),
    capsule('keyed', { apiKeys: KEYS.keyed }),
    capsule('keyed-other', { apiKeys: KEYS['keyed-other'] }),
  ]);
  // A Capsule without the operator's activator slice does not sleep: the activator is not its route.
  await client.create({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name: 'awake', namespace: NS },
    spec: {
      artifacts: [{ name: 'drv', runtime: 'driver', version: '1.0.0' }],
      inference: { driver: { artifact: 'drv' }, model: 'm', endpoint: 'https://api.anthropic.com' },
    },
  });
  const common = {
    client,
    namespaces: [NS],
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    identity: 'test-activator',
    log: (m: string) => log.push(m),
    defaultMetrics: false,
    dial,
    apiKeyDigestKey: ACTIVATOR_KEY,
  };
  activator = await startActivator({ ...common, holdSeconds: 60 });
  short = await startActivator({ ...common, holdSeconds: 1 });
  await activator.synced();
  await short.synced();
});

afterAll(async () => {
  await activator?.stop();
  await short?.stop();
  await closeAll();
  if (NS) await deleteNamespace(NS);
});

describe('the activator: routing and fences', () => {
  it('a Host naming no sleep-enabled Capsule gets 404 with a JSON error', async () => {
    for (const host of [hostOf('nobody'), hostOf('awake'), 'localhost:8012']) {
      const r = await send(activator, host, { body: rpcBody(3) });
      expect(r.status, host).toBe(404);
      expect(r.headers['content-type']).toContain('application/json');
      expect(JSON.parse(r.body).error.message).toContain('E-OP-061');
    }
  });

  it('a source its NetworkPolicy does not admit gets 403 and creates no Event', async () => {
    const r = await send(activator, hostOf('refused'), { body: rpcBody(4) });
    expect(r.status).toBe(403);
    const body = JSON.parse(r.body);
    // Refused before its body is read: the error cannot name the request id.
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(body.error.message).toMatch(/127\.0\.0\.1 is not admitted by NetworkPolicy .*refused-ingress.*\[E-OP-062\]/);
    // The card too is behind the NetworkPolicy.
    expect((await send(activator, hostOf('refused'), { method: 'GET', path: '/.well-known/agent-card.json' })).status).toBe(403);
    expect(await wakeEvents('refused')).toEqual([]);
    expect(await activator.metrics.total('capsule_activator_refusals_total', { reason: 'network_policy' })).toBeGreaterThanOrEqual(2);
  });

  it('a bad token gets 401 from a real TokenReview, with WWW-Authenticate, and creates no Event', async () => {
    const garbage = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    for (const headers of [{ authorization: `Bearer ${garbage}` }, {}] as Record<string, string>[]) {
      const r = await send(activator, hostOf('cap'), { body: rpcBody(5), headers });
      expect(r.status).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer realm="a2a"');
      expect(JSON.parse(r.body).error.message).toContain('E-OP-063');
    }
    // A real token, but for another capsule's URL (audience): refused too.
    const sa = await kubectl(['create', 'serviceaccount', 'caller', '-n', NS]);
    expect(sa.code, sa.stderr).toBe(0);
    const other = await kubectl(['create', 'token', 'caller', '-n', NS, '--audience', a2aUrl('open')]);
    const r = await send(activator, hostOf('cap'), { body: rpcBody(6), headers: { authorization: `Bearer ${other.stdout.trim()}` } });
    expect(r.status).toBe(401);
    expect(await wakeEvents('cap')).toEqual([]);
  });

  it('an API key that is not the capsule’s, or is another capsule’s, gets 401 and creates no Event', async () => {
    for (const key of ['keyed-ci-bot-key-0123456789abcdeX', KEYS['keyed-other']['ci-bot'], 'short']) {
      const r = await send(activator, hostOf('keyed'), { body: rpcBody(7), headers: { authorization: `Bearer ${key}` } });
      expect(r.status, key).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer realm="a2a"');
      expect(JSON.parse(r.body).error.message).toBe(`invalid credentials: capsule ${NS}/keyed was not woken [E-OP-063]`);
    }
    expect(await wakeEvents('keyed')).toEqual([]);
    expect(await heldNow(activator)).toBe(0);
  });

  it('the card is served from status.sleep.agentCard while asleep, without an Event', async () => {
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
      const r = await send(activator, hostOf('cap'), { method: 'GET', path });
      expect(r.status, path).toBe(200);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body).toBe(CARD);
    }
    expect(await wakeEvents('cap')).toEqual([]);
  });

  it('no recorded card: 503 with Retry-After', async () => {
    const r = await send(activator, hostOf('nocard'), { method: 'GET', path: '/.well-known/agent-card.json' });
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('5');
    expect(JSON.parse(r.body).error).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
    expect(await wakeEvents('nocard')).toEqual([]);
  });
});

describe('the activator: wake, hold, deliver', () => {
  let capsuleServer: A2AServer;
  beforeAll(async () => {
    // The capsule authenticates the forwarded token itself (a real TokenReview for its own URL).
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const auth = createAuthenticator({ anonymous: true, serviceAccounts: tokenReviewVerifier({ audience: a2aUrl('cap'), kubeConfig: kc, cacheMs: 0 }) });
    capsuleServer = await serve(async (ctx) => ({ state: 'completed', text: `awake: ${ctx.text}` }), { grpcPort: 0, auth });
  });

  it('a permitted request creates one WakeRequested Event, is held, then delivered when a pod is ready', async () => {
    const token = (await kubectl(['create', 'token', 'caller', '-n', NS, '--audience', a2aUrl('cap')])).stdout.trim();
    const headers = { authorization: `Bearer ${token}`, 'A2A-Version': '1.0', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const first = send(activator, hostOf('cap'), { body: rpcBody(10), headers });
    const second = send(activator, hostOf('cap'), { body: rpcBody(11), headers });
    await eventually('both requests held', async () => (await heldNow(activator)) === 2);
    const events = await eventually('the WakeRequested Event', async () => {
      const e = await wakeEvents('cap');
      return e.length ? e : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      reason: 'WakeRequested',
      type: 'Normal',
      source: { component: 'capsule-activator' },
      involvedObject: { kind: 'Capsule', name: 'cap', namespace: NS },
    });
    expect(events[0].message).toContain('JSON-RPC');

    await podReady('cap', Number(new URL(capsuleServer.url).port));
    const [a, b] = await Promise.all([first, second]);
    for (const [r, id] of [
      [a, 10],
      [b, 11],
    ] as const) {
      expect(r.status).toBe(200);
      const body = JSON.parse(r.body);
      expect(body.id).toBe(id);
      expect(JSON.stringify(body.result)).toContain('awake: wake up');
    }
    expect(await heldNow(activator)).toBe(0);
    expect(await activator.metrics.total('capsule_activator_wakes_requested_total')).toBe(1);
    expect(await wakeEvents('cap')).toHaveLength(1);
  });

  it('an API key of the capsule passes the fence: one WakeRequested Event, held, then delivered to the capsule, which takes the same key', async () => {
    // The capsule's runtime reads its Secret as kubelet mounts it: one file per entry.
    const dir = mkdtempSync(join(tmpdir(), 'keyed-secret-'));
    for (const [name, b64] of Object.entries(secretData(KEYS.keyed))) writeFileSync(join(dir, name), Buffer.from(b64, 'base64'));
    const keyed = await serve(async (ctx) => ({ state: 'completed', text: `awake for ${ctx.text}` }), {
      auth: createAuthenticator({ anonymous: false, apiKeys: readApiKeys(dir) }),
    });
    const answer = send(activator, hostOf('keyed'), { body: rpcBody(12), headers: { authorization: `Bearer ${KEYS.keyed['ci-bot']}`, 'A2A-Version': '1.0' } });
    const events = await eventually('the WakeRequested Event', async () => {
      const e = await wakeEvents('keyed');
      return e.length ? e : undefined;
    });
    expect(events).toHaveLength(1);
    await podReady('keyed', Number(new URL(keyed.url).port));
    const r = await answer;
    expect(r.status, r.body).toBe(200);
    expect(JSON.stringify(JSON.parse(r.body).result)).toContain('awake for wake up');
  });

  it('a ready pod it cannot connect to yet (the NetworkPolicy engine lags the pod) gets the request once it accepts, not a 502', async () => {
    // The port of a pod whose address the network policy does not admit yet: nothing accepts there.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    await podReady('lagging', port);
    const answer = send(activator, hostOf('lagging'), { body: rpcBody(30), headers: { 'A2A-Version': '1.0' } });
    await eventually('a refused connect, tried again', async () => log.some((l) => l.includes(`:${port} not reachable yet (ECONNREFUSED)`)));
    const pod = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end(JSON.stringify({ jsonrpc: '2.0', id: 30, result: { kind: 'task', note: 'delivered after the policy admitted it' } })));
    });
    await new Promise<void>((r) => pod.listen(port, '127.0.0.1', r));
    try {
      const r = await answer;
      expect(r.status).toBe(200);
      expect(r.body).toContain('delivered after the policy admitted it');
    } finally {
      await new Promise((r) => pod.close(r));
    }
  });

  it("a starting pod that answers its own /readyz gets the held request before the kubelet's probe makes it ready", async () => {
    let readyzAsked = 0;
    const pod = http.createServer((req, res) => {
      req.resume();
      if (req.url === '/readyz') {
        readyzAsked++;
        res.end('{"status":"ready"}');
        return;
      }
      req.on('end', () => res.end(JSON.stringify({ jsonrpc: '2.0', id: 31, result: { kind: 'task', note: 'served before the kubelet said ready' } })));
    });
    await new Promise<void>((r) => pod.listen(0, '127.0.0.1', r));
    try {
      const answer = send(activator, hostOf('starting'), { body: rpcBody(31), headers: { 'A2A-Version': '1.0' } });
      await eventually('the request held', async () => (await heldNow(activator)) >= 1);
      // The woken pod has its address, not yet Ready: the EndpointSlice controller lists it so.
      await slice('starting-pod', 'starting', 'endpointslice-controller.k8s.io', POD_IP, (pod.address() as net.AddressInfo).port, false);
      const r = await answer;
      expect(r.status).toBe(200);
      expect(r.body).toContain('served before the kubelet said ready');
      expect(readyzAsked).toBeGreaterThan(0);
    } finally {
      await new Promise((r) => pod.close(r));
    }
  });

  it('a Capsule with a ready pod is proxied at once, without an Event', async () => {
    const token = (await kubectl(['create', 'token', 'caller', '-n', NS, '--audience', a2aUrl('cap')])).stdout.trim();
    const r = await send(activator, hostOf('cap'), { body: rpcBody(12), headers: { authorization: `Bearer ${token}`, 'A2A-Version': '1.0' } });
    expect(r.status).toBe(200);
    expect(await wakeEvents('cap')).toHaveLength(1);
  });

  it('a server-sent-events stream flows through event by event', async () => {
    let second!: () => void;
    const mayWriteSecond = new Promise<void>((r) => (second = r));
    const sse = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('data: {"n":1}\n\n');
      // The second event only after the caller has read the first through the activator.
      void mayWriteSecond.then(() => res.end('data: {"n":2}\n\n'));
    });
    await new Promise<void>((r) => sse.listen(0, '127.0.0.1', r));
    try {
      const answer = new Promise<{ first: string; all: string; type: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: activator.port,
            method: 'POST',
            path: '/',
            headers: { host: hostOf('stream'), 'content-type': 'application/json', accept: 'text/event-stream' },
          },
          (res) => {
            let all = '';
            let first = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              all += c;
              if (!first && all.includes('\n\n')) {
                first = all;
                second();
              }
            });
            res.on('end', () => resolve({ first, all, type: String(res.headers['content-type']) }));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: msg10('s') } }));
      });
      await eventually('the stream request held', async () => (await heldNow(activator)) === 1);
      await podReady('stream', (sse.address() as AddressInfo).port);
      const r = await answer;
      expect(r.type).toBe('text/event-stream');
      expect(r.first).toBe('data: {"n":1}\n\n');
      expect(r.all).toBe('data: {"n":1}\n\ndata: {"n":2}\n\n');
    } finally {
      sse.close();
    }
  });

  it('a gRPC call over h2c is held and delivered', async () => {
    const Client = grpc.makeGenericClientConstructor(A2AService as unknown as grpc.ServiceDefinition, 'A2AService');
    const c = new Client(`127.0.0.1:${activator.port}`, grpc.credentials.createInsecure(), { 'grpc.default_authority': hostOf('grpc') }) as unknown as {
      getTask(req: object, md: grpc.Metadata, cb: (e: grpc.ServiceError | null, r?: unknown) => void): void;
      close(): void;
    };
    try {
      const md = new grpc.Metadata();
      md.set('a2a-version', '1.0');
      const call = new Promise<grpc.ServiceError | null>((resolve) => c.getTask({ name: 'tasks/no-such-task' }, md, (e) => resolve(e)));
      await eventually('the gRPC call held', async () => (await heldNow(activator)) === 1);
      const events = await eventually('the WakeRequested Event', async () => {
        const e = await wakeEvents('grpc');
        return e.length ? e : undefined;
      });
      expect(events[0].message).toContain('gRPC');
      const grpcPort = Number(capsuleServer.grpcAddress!.split(':').pop());
      await podReady('grpc', grpcPort);
      // The capsule's own answer: it has no such task.
      expect((await call)?.code).toBe(grpc.status.NOT_FOUND);
    } finally {
      c.close();
    }
  });

  it('a stopping activator takes no new connection but delivers what it holds', async () => {
    const draining = await startActivator({
      client,
      namespaces: [NS],
      port: 0,
      metricsPort: 0,
      host: '127.0.0.1',
      identity: 'draining-activator',
      log: (m: string) => log.push(m),
      defaultMetrics: false,
      dial,
      holdSeconds: 60,
    });
    await draining.synced();
    const held = send(draining, hostOf('drain'), { body: rpcBody(40), headers: { 'A2A-Version': '1.0' } });
    await eventually('the request held', async () => (await heldNow(draining)) === 1);
    const stopped = draining.stop(60_000);
    await expect(send(draining, hostOf('drain'), { body: rpcBody(41) })).rejects.toThrow(/ECONNREFUSED/);
    await podReady('drain', Number(new URL(capsuleServer.url).port));
    const r = await held;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).id).toBe(40);
    await stopped;
  });

  it('the hold bound: 503 with Retry-After: 5 in each binding, UNAVAILABLE for gRPC', async () => {
    const rpc = await send(short, hostOf('sleepy'), { body: rpcBody(20) });
    expect(rpc.status).toBe(503);
    expect(rpc.headers['retry-after']).toBe('5');
    expect(JSON.parse(rpc.body)).toMatchObject({ jsonrpc: '2.0', id: 20, error: { code: -32603, data: { retryAfterSeconds: 5 } } });
    expect(JSON.parse(rpc.body).error.message).toMatch(/capsule .*\/sleepy is waking .*\[E-OP-064\]/);

    const rest = await send(short, hostOf('sleepy'), { path: '/rest/message:send', body: JSON.stringify({ message: msg10('x') }) });
    expect(rest.status).toBe(503);
    expect(rest.headers['retry-after']).toBe('5');
    expect(JSON.parse(rest.body).error).toMatchObject({ code: 503, status: 'UNAVAILABLE' });

    const Client = grpc.makeGenericClientConstructor(A2AService as unknown as grpc.ServiceDefinition, 'A2AService');
    const c = new Client(`127.0.0.1:${short.port}`, grpc.credentials.createInsecure(), { 'grpc.default_authority': hostOf('sleepy') }) as unknown as {
      getTask(req: object, md: grpc.Metadata, cb: (e: grpc.ServiceError | null) => void): void;
      close(): void;
    };
    const e = await new Promise<grpc.ServiceError | null>((resolve) => c.getTask({ name: 'tasks/x' }, new grpc.Metadata(), resolve));
    c.close();
    expect(e?.code, e?.details).toBe(grpc.status.UNAVAILABLE);
    expect(e?.details).toContain('E-OP-064');
    expect(await short.metrics.total('capsule_activator_refusals_total', { reason: 'wake_timeout' })).toBe(3);
  });
});

describe("the activator with exactly the chart's RBAC", () => {
  const release = () => `b3${NS.slice(-8)}`;
  afterAll(async () => {
    for (const kind of ['clusterrole', 'clusterrolebinding']) await kubectl(['delete', kind, `${release()}-activator`, '--ignore-not-found']);
  });

  it('syncs, reviews tokens and asks for a wake as its ServiceAccount, and may write nothing else', async () => {
    const rendered = await helm([
      'template',
      release(),
      `${repoRoot}/charts/capsule-operator`,
      '-n',
      NS,
      '--set',
      `watchNamespaces={${NS}}`,
      '-s',
      'templates/activator-rbac.yaml',
    ]);
    expect(rendered.code, rendered.stderr).toBe(0);
    const applied = await kubectl(['apply', '-f', '-'], rendered.stdout);
    expect(applied.code, applied.stderr).toBe(0);
    const sa = `system:serviceaccount:${NS}:${release()}-activator`;
    // The authorizer takes the new bindings from its own watch: wait until it does.
    for (const [verb, resource] of [
      ['create', 'tokenreviews.authentication.k8s.io'],
      ['list', 'endpointslices.discovery.k8s.io'],
    ]) {
      await eventually(`${sa} may ${verb} ${resource}`, async () => (await kubectl(['auth', 'can-i', verb!, resource!, '-n', NS, '--as', sa])).code === 0);
    }
    const asActivator = KubeClient.fromFile(kubeconfig, { impersonate: sa });
    const a = await startActivator({
      client: asActivator,
      namespaces: [NS],
      port: 0,
      metricsPort: 0,
      host: '127.0.0.1',
      holdSeconds: 1,
      identity: 'rbac-activator',
      log: (m) => log.push(m),
      defaultMetrics: false,
    });
    try {
      await a.synced();
      // Past both fences (a token the API server reviews for it, as the activator's ServiceAccount) → an Event.
      await capsule('rbac');
      await kubectl(['create', 'serviceaccount', 'rbac-caller', '-n', NS]);
      const token = (await kubectl(['create', 'token', 'rbac-caller', '-n', NS, '--audience', a2aUrl('rbac')])).stdout.trim();
      await eventually(
        'the rbac capsule in the cache',
        async () => (await send(a, hostOf('rbac'), { method: 'GET', path: '/.well-known/agent.json' })).status === 200,
      );
      const r = await send(a, hostOf('rbac'), { body: rpcBody(30), headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(503); // no pod comes: the bound
      await eventually('the WakeRequested Event, created as the activator', async () => (await wakeEvents('rbac')).length === 1, 20_000);
      // And nothing more: it may not touch a workload or read a Secret.
      for (const [verb, resource] of [
        ['patch', 'deployments.apps'],
        ['create', 'pods'],
        ['get', 'secrets'],
        ['update', 'capsules.murmur.io/status'],
        ['create', 'endpointslices.discovery.k8s.io'],
      ]) {
        const can = await kubectl(['auth', 'can-i', verb!, resource!, '-n', NS, '--as', sa]);
        expect(can.stdout.trim(), `${verb} ${resource}`).toBe('no');
      }
    } finally {
      await a.stop();
      asActivator.close();
    }
  });
});
