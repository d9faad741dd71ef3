import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ComponentInstance } from '../../runtime/host/index.ts';
import { DeadlineExceeded, GuestTrap, MemoryLimitExceeded } from '../../runtime/host/index.ts';
import { op, probe, quietImports } from './probe.ts';

let root: string;
let grant: string;
let inst: ComponentInstance;
let server: Server;
let serverHits = 0;
let port = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sandbox-'));
  grant = join(root, 'grant');
  mkdirSync(grant);
  writeFileSync(join(root, 'secret.txt'), 'outside the preopen');
  writeFileSync(join(grant, 'inside.txt'), 'inside the preopen');
  symlinkSync(join(root, 'secret.txt'), join(grant, 'link-out.txt'));
  symlinkSync('../secret.txt', join(grant, 'rel-link-out.txt'));
  server = createServer((_q, r) => {
    serverHits++;
    r.end('hello');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  process.env.MURMUR_TEST_SECRET = 'do-not-leak';
  inst = await probe({ preopen: grant, env: { GRANTED: 'yes' }, logFile: join(root, 'guest.log') });
});

afterAll(async () => {
  await inst?.close();
  server?.close();
});

describe('filesystem grant', () => {
  it('reads and writes inside the preopen', async () => {
    expect((await op(inst, { op: 'read', path: 'inside.txt' })).body).toEqual({ ok: true, value: 'inside the preopen' });
    expect((await op(inst, { op: 'write', path: 'made-by-guest.txt', text: 'persisted' })).body.ok).toBe(true);
    expect(readFileSync(join(grant, 'made-by-guest.txt'), 'utf8')).toBe('persisted');
  });

  it('sees exactly one preopen', async () => {
    expect((await op(inst, { op: 'preopens' })).body.value).toEqual(['/']);
  });

  it('refuses reading outside the preopen by absolute path', async () => {
    const r = await op(inst, { op: 'read', path: join(root, 'secret.txt') });
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toMatch(/not-permitted|no-entry/);
  });

  it('refuses writing outside the preopen', async () => {
    const r = await op(inst, { op: 'write', path: join(root, 'planted.txt'), text: 'x' });
    expect(r.body.ok).toBe(false);
    expect(existsSync(join(root, 'planted.txt'))).toBe(false);
  });

  it('refuses a .. path', async () => {
    const r = await op(inst, { op: 'read', path: '../secret.txt' });
    expect(r.body).toMatchObject({ ok: false });
    expect(r.body.error).toMatch(/not-permitted|no-entry/);
    const w = await op(inst, { op: 'write', path: '../planted2.txt', text: 'x' });
    expect(w.body.ok).toBe(false);
    expect(existsSync(join(root, 'planted2.txt'))).toBe(false);
  });

  it('refuses a symlink pointing out of the preopen (absolute and relative targets)', async () => {
    for (const path of ['link-out.txt', 'rel-link-out.txt']) {
      const r = await op(inst, { op: 'read', path });
      expect(r.body.ok, path).toBe(false);
      expect(r.body.error).toMatch(/not-permitted|no-entry/);
    }
  });

  it('a component with no filesystem grant sees no preopen at all', async () => {
    const bare = await probe();
    try {
      expect((await op(bare, { op: 'preopens' })).body.value).toEqual([]);
      expect((await op(bare, { op: 'read', path: 'inside.txt' })).body.ok).toBe(false);
    } finally {
      await bare.close();
    }
  });
});

describe('environment grant', () => {
  it('shows the guest only the granted variables', async () => {
    expect((await op(inst, { op: 'envAll' })).body.value).toEqual(['GRANTED']);
    expect((await op(inst, { op: 'env', name: 'GRANTED' })).body.value).toBe('yes');
  });

  it('refuses reading a variable that was not granted', async () => {
    expect((await op(inst, { op: 'env', name: 'MURMUR_TEST_SECRET' })).body.value).toBeNull();
    expect((await op(inst, { op: 'env', name: 'PATH' })).body.value).toBeNull();
  });
});

describe('network grant', () => {
  it('refuses outgoing HTTP with no grant, makes no connection, and the instance stays usable', async () => {
    const before = serverHits;
    const r = await op(inst, { op: 'fetch', url: `http://127.0.0.1:${port}/` });
    expect(r.body.ok).toBe(false);
    expect(serverHits).toBe(before);
    expect((await op(inst, { op: 'ping' })).body.value).toBe('pong');
  });

  it('reports each refused request to the host (scheme, host, port), and none that was allowed', async () => {
    const denials: unknown[] = [];
    const net = await probe({ networkAllow: [`127.0.0.1:${port}`] }, { onNetworkDenied: (d) => denials.push(d) });
    try {
      expect((await op(net, { op: 'fetch', url: `http://127.0.0.1:${port}/` })).body.ok).toBe(true);
      expect((await op(net, { op: 'fetch', url: 'https://example.com/x' })).body.ok).toBe(false);
      expect((await op(net, { op: 'fetch', url: `http://localhost:${port}/` })).body.ok).toBe(false);
      expect(denials).toEqual([
        { scheme: 'https', host: 'example.com', port: 443 },
        { scheme: 'http', host: 'localhost', port },
      ]);
    } finally {
      await net.close();
    }
  });

  it('allows exactly the granted destination', async () => {
    const net = await probe({ networkAllow: [`127.0.0.1:${port}`] });
    try {
      expect((await op(net, { op: 'fetch', url: `http://127.0.0.1:${port}/` })).body).toEqual({ ok: true, value: '200 hello' });
      // Same host, other port: refused.
      const other = createTcpServer((s) => s.destroy());
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
      let connected = 0;
      other.on('connection', () => connected++);
      const otherPort = (other.address() as { port: number }).port;
      expect((await op(net, { op: 'fetch', url: `http://127.0.0.1:${otherPort}/` })).body.ok).toBe(false);
      expect(connected).toBe(0);
      other.close();
    } finally {
      await net.close();
    }
  });
});

describe('limits', () => {
  it('stops an infinite loop at the deadline with a typed error, and the next call works', async () => {
    const err = await op(inst, { op: 'spin' }, 1500).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineExceeded);
    expect((err as DeadlineExceeded).message).toMatch(/sandbox-probe: run\.run did not finish within its 1500 ms deadline/);
    expect((err as DeadlineExceeded).code).toBe('E-HOST-003');
    expect((await op(inst, { op: 'ping' })).body.value).toBe('pong');
  });

  it('stops a host call that never returns at the deadline', async () => {
    const stuck = await probe(
      {},
      {
        imports: {
          'murmur:task/task': { requestInput: () => new Promise(() => {}) },
          'murmur:text/chunks': { emitChunk: () => {}, emitThinkingChunk: () => {} },
        },
      },
    );
    try {
      const err = await op(stuck, { op: 'ask' }, 1500).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DeadlineExceeded);
      expect((await op(stuck, { op: 'ping' })).body.value).toBe('pong');
    } finally {
      await stuck.close();
    }
  });

  it('kills unbounded memory growth at the cap with a typed error naming the limit', async () => {
    const small = await probe({}, { memoryBytes: 96 * 1048576 });
    try {
      const err = await op(small, { op: 'grow', mb: 8 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MemoryLimitExceeded);
      expect((err as MemoryLimitExceeded).message).toMatch(/past its 96 MiB cap/);
      expect((err as MemoryLimitExceeded).limitBytes).toBe(96 * 1048576);
      expect((await op(small, { op: 'ping' })).body.value).toBe('pong');
    } finally {
      await small.close();
    }
  });

  it('reports a trap as a fault, distinct from a tool error, and recovers', async () => {
    const err = await op(inst, { op: 'trap' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GuestTrap);
    expect((err as GuestTrap).message).toMatch(/sandbox-probe: run\.run trapped/);
    // A tool answering status failed is data, not a fault.
    const data = await op(inst, { op: 'read', path: 'missing.txt' });
    expect(data.status).toBe('failed');
    expect((await op(inst, { op: 'ping' })).body.value).toBe('pong');
  });
});

describe('closing', () => {
  it('closing an instance answers a call still running at once, with a typed fault', async () => {
    // The guest announces it is spinning (a chunk through its text/chunks import), then never
    // yields: only terminating its worker can answer the call.
    let spinning!: () => void;
    const inLoop = new Promise<void>((r) => (spinning = r));
    const x = await probe(
      {},
      { deadlineMs: 120_000, imports: { ...quietImports, 'murmur:text/chunks': { emitChunk: () => spinning(), emitThinkingChunk: () => {} } } },
    );
    const running = op(x, { op: 'spin', announce: true }).catch((e: unknown) => e);
    await inLoop;
    await x.close();
    const err = (await running) as { code?: string; message?: string };
    expect(err.code).toBe('E-HOST-007');
    expect(err.message).toMatch(/run\.run was stopped: the instance closed/);
  });
});

describe('isolation', () => {
  it('one instance cannot see another instance’s files or memory', async () => {
    const dirA = mkdtempSync(join(tmpdir(), 'iso-a-'));
    const dirB = mkdtempSync(join(tmpdir(), 'iso-b-'));
    const a = await probe({ preopen: dirA });
    const b = await probe({ preopen: dirB });
    try {
      await op(a, { op: 'write', path: 'a-only.txt', text: 'A' });
      expect((await op(b, { op: 'read', path: 'a-only.txt' })).body.ok).toBe(false);
      expect((await op(b, { op: 'read', path: join(dirA, 'a-only.txt') })).body.ok).toBe(false);
      await op(a, { op: 'count' });
      await op(a, { op: 'count' });
      expect((await op(a, { op: 'count' })).body.value).toBe(3);
      expect((await op(b, { op: 'count' })).body.value).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('two concurrent calls on two instances both complete', async () => {
    const a = await probe();
    const b = await probe();
    try {
      const [ra, rb] = await Promise.all([op(a, { op: 'echo', value: 'A' }), op(b, { op: 'echo', value: 'B' })]);
      expect(ra.body.value).toBe('A');
      expect(rb.body.value).toBe('B');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('captures the guest’s stdout into its own log file', async () => {
    await op(inst, { op: 'log', text: 'line from the guest' });
    expect(readFileSync(join(root, 'guest.log'), 'utf8')).toContain('line from the guest');
  });
});
