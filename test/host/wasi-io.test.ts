/**
 * The component thread's WASI I/O (runtime/host/wasi-io/): streams, pollables, clocks, files and
 * outgoing HTTP answered in the thread itself, HTTP performed by the main thread once per request.
 * Driven in a real worker thread with preview2-shim's own call numbers, against a real HTTP server.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { constants, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveNet } from '../../runtime/host/wasi-io/net-relay.ts';

const BOOT = fileURLToPath(new URL('../../runtime/worker-boot.mjs', import.meta.url));
const HARNESS = new URL('./wasi-io-harness.ts', import.meta.url).href;

let server: Server;
let base = '';
const BIG = Buffer.alloc(3 * 1048576 + 17, 'q');
const PIECES = Array.from({ length: 8 }, (_, i) => `event: e${i}\ndata: {"n":${i}}\n\n`);
/** Resolves when the server sees a request to /slow end before its response did. */
let slowClosed: Promise<void>;
let onSlowClosed: () => void = () => {};
let onSlowSeen: () => void = () => {};
const seen: { method: string; body: string; headers: IncomingMessage['headers'] }[] = [];

beforeAll(async () => {
  slowClosed = new Promise((r) => (onSlowClosed = r));
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString();
      seen.push({ method: req.method!, body, headers: req.headers });
      if (req.url === '/big') {
        res.setHeader('set-cookie', ['a=1', 'b=2']);
        res.end(BIG);
      } else if (req.url === '/echo') res.end(`${req.method} ${body}`);
      else if (req.url === '/pieces') {
        // One HTTP chunk per write, as a provider streams its server-sent events.
        for (const p of PIECES) res.write(p);
        res.end();
      } else if (req.url === '/slow') {
        // Head and a first chunk, then the body never ends: the guest lets go, or is stopped.
        res.writeHead(200);
        res.write('first');
        onSlowSeen();
        res.on('close', () => onSlowClosed());
      } else res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => {
  server?.closeAllConnections();
  server?.close();
});

interface Harness {
  worker: Worker;
  run(scenario: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

async function harness(): Promise<Harness> {
  const netFlag = new SharedArrayBuffer(4);
  const { port1, port2 } = new MessageChannel();
  serveNet(port1, new Int32Array(netFlag));
  const worker = new Worker(BOOT, { workerData: { entry: HARNESS, netPort: port2, netFlag }, transferList: [port2], execArgv: [] });
  // As runtime/host/workers.ts launch() does: a worker's end closes the main side of its channel.
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
    run(scenario, args = {}) {
      return new Promise((resolve, reject) => {
        const on = (m: { result?: Record<string, unknown>; error?: string }) => {
          if (!('result' in m) && !('error' in m)) return;
          worker.off('message', on);
          if (m.error !== undefined) reject(new Error(m.error));
          else resolve(m.result!);
        };
        worker.on('message', on);
        worker.postMessage({ scenario, args });
      });
    },
  };
}

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h?.worker.terminate();
});

describe('outgoing HTTP from a component thread', () => {
  it('brings back status, every header (a repeated one kept apart) and a 3 MiB body byte for byte, and leaves no stream, poll or future open', async () => {
    const r = await h.run('get', { url: `${base}/big` });
    expect(r.tag).toBe('ok');
    expect(r.status).toBe(200);
    expect((r.headers as [string, string][]).filter(([k]) => k === 'set-cookie').map(([, v]) => v)).toEqual(['a=1', 'b=2']);
    expect(r.bytes).toBe(BIG.byteLength);
    expect(r.text).toBe(BIG.toString('latin1'));
    expect(r.reads as number).toBeGreaterThan(1); // streamed in reads of at most 64 KiB
    expect(r.left).toEqual({ streams: 0, polls: 0, futures: 0 });
  });

  it('a read takes every body chunk that has arrived, as far as they fit, not one network chunk per read', async () => {
    const r = await h.run('getWhole', { url: `${base}/pieces` });
    expect(r.status).toBe(200);
    expect(r.text).toBe(PIECES.join(''));
    expect(r.reads).toBe(1);
  });

  it('sends a body written in several writes as one request, with the guest’s headers', async () => {
    const r = await h.run('post', { url: `${base}/echo`, parts: ['one ', 'two ', 'three'], contentLength: 13n });
    expect(r).toEqual({ status: 200, echoed: 'POST one two three' });
    const last = seen.at(-1)!;
    expect(last.headers['content-type']).toBe('text/plain');
    expect(last.body).toBe('one two three');
  });

  it('refuses a write past the declared content length, naming the size', async () => {
    const r = await h.run('tooLong', { url: `${base}/echo` });
    expect(r.thrown).toEqual({ tag: 'last-operation-failed', val: { tag: 'HTTP-request-body-size', val: 4n } });
  });

  it('refuses to finish a body shorter than its declared content length', async () => {
    const r = await h.run('shortOnFinish', { url: `${base}/echo` });
    expect(r.thrown).toEqual({ tag: 'HTTP-request-body-size', val: 3n });
  });

  it('answers a refused connection with wasi:http’s connection-refused', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const r = await h.run('refused', { url: `http://127.0.0.1:${port}/` });
    expect(r).toEqual({ outer: 'ok', inner: 'err', code: { tag: 'connection-refused' } });
  });

  it('a response the guest drops before its end is aborted on the main thread (the server sees the connection close)', async () => {
    slowClosed = new Promise((r) => (onSlowClosed = r));
    const r = await h.run('dropEarly', { url: `${base}/slow` });
    expect(r).toEqual({ status: 200, left: { streams: 0, polls: 0, futures: 0 } });
    await slowClosed;
  });

  it('a guest that only polls ready() on its response (body never finished) still gets its request sent and answered', async () => {
    expect(await h.run('pollReady', { url: `${base}/plain` })).toEqual({ status: 200 });
  });

  it('a response future dropped while its request waits for its body is never sent', async () => {
    const before = seen.length;
    expect(await h.run('dropBeforeSend', { url: base })).toEqual({ status: 200 });
    expect(seen.slice(before).map((s) => s.method)).toEqual(['GET']);
  });

  it('a worker stopped while it waits for a response leaves no request running', async () => {
    const other = await harness();
    slowClosed = new Promise((r) => (onSlowClosed = r));
    const seenByServer = new Promise<void>((r) => (onSlowSeen = r));
    void other.run('hang', { url: `${base}/slow` }).catch(() => {});
    await seenByServer;
    await other.worker.terminate();
    await slowClosed;
  });
});

describe('streams, clocks and files in the component thread', () => {
  it('a clock pollable is not ready before its deadline and is after blocking on it', async () => {
    expect(await h.run('clock')).toEqual({ before: false, after: true, reachedDeadline: true });
  });

  it('a poll list answers with the indices of the ready pollables only', async () => {
    expect(await h.run('pollList')).toEqual([1]);
  });

  it('writes and reads a file through streams and descriptor calls, and a closed descriptor answers EBADF', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wasi-io-'));
    const path = join(dir, 'f.txt');
    const r = await h.run('files', { path, flags: constants.O_CREAT | constants.O_RDWR });
    expect(r).toEqual({
      type: 'regular-file',
      size: 11,
      first: 'files',
      closed: true,
      pread: 'hello',
      afterClose: 'EBADF',
      left: { streams: 0, polls: 0, futures: 0 },
    });
    expect(readFileSync(path, 'utf8')).toBe('hello files');
  });

  it('stdin is empty: a component never reads the runtime’s own standard input', async () => {
    expect(await h.run('stdin')).toEqual({ closed: true });
  });

  it('a call it does not serve (a raw socket) fails naming the call', async () => {
    expect((await h.run('socket')).error).toMatch(/SOCKET_TCP_CREATE_HANDLE is not available to components/);
  });
});
