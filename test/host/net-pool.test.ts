/**
 * The connections behind components' outgoing HTTP (runtime/host/wasi-io/net-pool.ts and
 * net-relay.ts), against a real HTTP server that counts the connections it accepts: sequential
 * requests share one connection, also when the guest drops a response at its last event before
 * the end reached its thread; the pool holds at most its bounds; and a destination the allowlist
 * refuses stays refused while a pooled connection to the same server exists.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveNet } from '../../runtime/host/wasi-io/net-relay.ts';
import { DEFAULT_POOL, netAgents, type NetAgents } from '../../runtime/host/wasi-io/net-pool.ts';
import { op, probe } from './probe.ts';

const BOOT = fileURLToPath(new URL('../../runtime/worker-boot.mjs', import.meta.url));
const HARNESS = new URL('./wasi-io-harness.ts', import.meta.url).href;

let server: Server;
let port = 0;
let base = '';
const accepted: Socket[] = [];
let requests = 0;
/** The /sse response the server holds open after its last event, until the test ends it. */
let held: ServerResponse | undefined;
let onHeld: () => void = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      if (req.url === '/chunks') {
        // Five body chunks and the end in one socket write (corked): one read on the other side.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.cork();
        for (const e of ['a', 'b', 'c', 'd', 'e']) res.write(`data: ${e}\n\n`);
        res.end();
      } else if (req.url === '/sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: message_stop\ndata: {}\n\n');
        held = res;
        onHeld();
      } else res.end('ok');
    });
  });
  server.on('connection', (s: Socket) => accepted.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(() => {
  server?.closeAllConnections();
  server?.close();
});

interface Harness {
  worker: Worker;
  /** How many times the main thread has posted to the component thread and woken it. */
  posts(): number;
  run(scenario: string, args?: Record<string, unknown>): Promise<unknown>;
}

/** A component thread (the wasi-io test harness) whose requests the main thread performs with `agents`. */
async function harness(agents: NetAgents): Promise<Harness> {
  const netFlag = new SharedArrayBuffer(4);
  const { port1, port2 } = new MessageChannel();
  serveNet(port1, new Int32Array(netFlag), agents);
  const worker = new Worker(BOOT, { workerData: { entry: HARNESS, netPort: port2, netFlag }, transferList: [port2], execArgv: [] });
  worker.once('exit', () => port1.close());
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.on('message', function onReady(m: { ready?: boolean }) {
      if (m.ready) {
        worker.off('message', onReady);
        resolve();
      }
    });
  });
  return {
    worker,
    posts: () => Atomics.load(new Int32Array(netFlag), 0),
    run: (scenario, args = {}) =>
      new Promise((resolve, reject) => {
        const on = (m: { result?: unknown; error?: string }) => {
          if (!('result' in m) && !('error' in m)) return;
          worker.off('message', on);
          if (m.error !== undefined) reject(new Error(m.error));
          else resolve(m.result);
        };
        worker.on('message', on);
        worker.postMessage({ scenario, args });
      }),
  };
}

const counts = (): { connections: number; requests: number } => ({ connections: accepted.length, requests });
const freeCount = (agents: NetAgents): number => Object.values(agents.forScheme(false).freeSockets).reduce((n, l) => n + (l?.length ?? 0), 0);

describe('connection pool for components’ outgoing HTTP', () => {
  it('a response dropped at its last event, before its end reached the guest, gives its connection back: the next request reuses it', async () => {
    const agents = netAgents();
    const h = await harness(agents);
    try {
      const before = counts();
      const seen = new Promise<void>((r) => (onHeld = r));
      const dropped = h.run('dropAtMarker', { url: `${base}/sse`, marker: 'message_stop' });
      await seen;
      const r = (await dropped) as { status: number; left: unknown };
      expect(r.status).toBe(200);
      expect(r.left).toEqual({ streams: 0, polls: 0, futures: 0 });
      // The end of the body comes only now, after the guest let go of it. Then wait for the
      // connection either to return to the pool or to close, whichever it does.
      const sock = accepted.at(-1)!;
      const settled = new Promise<string>((resolve) => {
        agents.forScheme(false).once('free', () => resolve('free'));
        sock.once('close', () => resolve('closed'));
      });
      held!.end();
      expect(await settled).toBe('free');
      expect(await h.run('get', { url: `${base}/plain` })).toMatchObject({ status: 200, text: 'ok' });
      expect(counts()).toEqual({ connections: before.connections + 1, requests: before.requests + 2 });
    } finally {
      await h.worker.terminate();
    }
  });

  it('a response read in one piece reaches the component thread as one post and one wake-up, its head, chunks and end in order', async () => {
    const h = await harness(netAgents());
    try {
      const r = (await h.run('get', { url: `${base}/chunks` })) as { status: number; text: string };
      expect(r.status).toBe(200);
      expect(r.text).toBe('data: a\n\ndata: b\n\ndata: c\n\ndata: d\n\ndata: e\n\n');
      expect(h.posts()).toBe(1);
    } finally {
      await h.worker.terminate();
    }
  });

  it('holds at most its bounds: six requests at once over two connections, one kept idle, with the idle timeout set', async () => {
    const agents = netAgents({ maxSockets: 2, maxTotalSockets: 2, maxFreeSockets: 1, freeSocketTimeoutMs: DEFAULT_POOL.freeSocketTimeoutMs });
    const h = await harness(agents);
    try {
      const before = counts();
      expect(await h.run('parallel', { url: `${base}/plain`, n: 6 })).toEqual(Array(6).fill('200 ok'));
      expect(counts().requests - before.requests).toBe(6);
      expect(counts().connections - before.connections).toBeLessThanOrEqual(2);
      const free = Object.values(agents.forScheme(false).freeSockets).flat();
      expect(free.length).toBeLessThanOrEqual(1);
      expect(freeCount(agents)).toBe(free.length);
      for (const s of free) expect(s!.timeout).toBe(DEFAULT_POOL.freeSocketTimeoutMs);
    } finally {
      await h.worker.terminate();
    }
  });

  it('closes a connection left idle in the pool past its idle timeout', async () => {
    const agents = netAgents({ ...DEFAULT_POOL, freeSocketTimeoutMs: 50 });
    const h = await harness(agents);
    try {
      const before = accepted.length;
      expect(await h.run('get', { url: `${base}/plain` })).toMatchObject({ status: 200, text: 'ok' });
      expect(accepted.length).toBe(before + 1);
      const serverSide = accepted.at(-1)!;
      const [pooled] = Object.values(agents.forScheme(false).freeSockets).flat();
      expect(pooled).toBeDefined();
      // The server never closes it (its keep-alive timeout is 5 s); only the pool's timeout can.
      const closed = (s: Socket) => (s.destroyed ? Promise.resolve() : new Promise<void>((r) => s.once('close', () => r())));
      await Promise.all([closed(pooled!), closed(serverSide)]);
      expect(freeCount(agents)).toBe(0);
    } finally {
      await h.worker.terminate();
    }
  });

  it('through a real component: two sequential requests share one connection, and a destination not allowed is refused although a pooled connection to the same server exists', async () => {
    const denied: unknown[] = [];
    const inst = await probe({ networkAllow: [`127.0.0.1:${port}`] }, { onNetworkDenied: (d) => denied.push(d) });
    try {
      const before = counts();
      expect((await op(inst, { op: 'fetch', url: `${base}/a` })).body).toEqual({ ok: true, value: '200 ok' });
      expect((await op(inst, { op: 'fetch', url: `${base}/b` })).body).toEqual({ ok: true, value: '200 ok' });
      const after = counts();
      expect(after.requests).toBe(before.requests + 2);
      // At most one new connection for both (none if the shared pool already held one to this server).
      expect(after.connections - before.connections).toBeLessThanOrEqual(1);
      // localhost is this very server, and a connection to it is idle in the pool: still refused,
      // before anything is sent.
      expect((await op(inst, { op: 'fetch', url: `http://localhost:${port}/c` })).body.ok).toBe(false);
      expect(denied).toEqual([{ scheme: 'http', host: 'localhost', port }]);
      expect(counts()).toEqual(after);
    } finally {
      await inst.close();
    }
  });
});
