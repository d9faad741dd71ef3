/**
 * Pre-instantiated spares (runtime/host/spares.ts): an instance served from a spare must see
 * exactly its own grants — never the empty ones it was instantiated under, never another
 * instance's — and a component that reads a grant while instantiating is never spared.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ComponentInstance, Grants } from '../../runtime/host/index.ts';
import { SparePool, SPARES } from '../../runtime/host/spares.ts';
import { GRANT_BOUND, lateBoundWasi, wasiImports } from '../../runtime/host/wasi.ts';
import type { Launched } from '../../runtime/host/workers.ts';
import { workerExecArgv } from '../../runtime/host/worker-flags.ts';
import { op, probe } from './probe.ts';

let root: string;
let server: Server;
let port = 0;
let hits = 0;
const open: ComponentInstance[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'spares-'));
  server = createServer((_q, r) => {
    hits++;
    r.end('hello');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await Promise.all(open.map((i) => i.close()));
  await SPARES.drain();
  server?.close();
});

async function started(grants: Partial<Grants>): Promise<ComponentInstance> {
  const inst = await probe(grants);
  open.push(inst);
  await inst.start();
  return inst;
}

/** Waits for the spare the last start scheduled (the pool says when it is settled), then expects it ready. */
async function spareReady(): Promise<void> {
  await SPARES.whenIdle();
  expect(SPARES.readyKeys().length).toBe(1);
}

function grantDir(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, `${name}.txt`), `file of ${name}`);
  return dir;
}

describe('pre-instantiated spares', () => {
  it('an instance served from a spare sees exactly its own grants, and the next spare-served instance sees only its own', async () => {
    const a = grantDir('a');
    // Two starts of the component: evidence it recurs, so the host keeps a spare of it.
    expect((await started({ preopen: a })).fromSpare).toBe(false);
    expect((await started({ preopen: a })).fromSpare).toBe(false);

    for (const name of ['b', 'c']) {
      await spareReady();
      const dir = grantDir(name);
      const log = join(root, `${name}.log`);
      const inst = await started({ preopen: dir, env: { WHO: name }, logFile: log, networkAllow: name === 'c' ? [`127.0.0.1:${port}`] : [] });
      expect(inst.fromSpare).toBe(true);

      expect((await op(inst, { op: 'preopens' })).body.value).toEqual(['/']);
      expect((await op(inst, { op: 'read', path: `${name}.txt` })).body).toEqual({ ok: true, value: `file of ${name}` });
      expect((await op(inst, { op: 'read', path: 'a.txt' })).body.ok).toBe(false);
      expect((await op(inst, { op: 'write', path: 'out.txt', text: name })).body.ok).toBe(true);
      expect(readFileSync(join(dir, 'out.txt'), 'utf8')).toBe(name);
      expect(existsSync(join(a, 'out.txt'))).toBe(false);

      expect((await op(inst, { op: 'envAll' })).body.value).toEqual(['WHO']);
      expect((await op(inst, { op: 'env', name: 'WHO' })).body.value).toBe(name);

      await op(inst, { op: 'log', text: `log line of ${name}` });
      expect(readFileSync(log, 'utf8')).toContain(`log line of ${name}`);

      const before = hits;
      const fetched = await op(inst, { op: 'fetch', url: `http://127.0.0.1:${port}/` });
      if (name === 'c') expect(fetched.body).toEqual({ ok: true, value: '200 hello' });
      else {
        expect(fetched.body.ok).toBe(false);
        expect(hits).toBe(before);
      }
    }
    expect(readFileSync(join(root, 'b.log'), 'utf8')).not.toContain('log line of c');
  });

  it('with spares turned off (MURMUR_SPARE_INSTANCES=0) every instance instantiates with its grants', async () => {
    const max = SPARES.max;
    SPARES.max = 0;
    await SPARES.whenIdle();
    await SPARES.drain();
    try {
      for (let i = 0; i < 3; i++) expect((await started({})).fromSpare).toBe(false);
      // Nothing is on its way either: no spare can turn up later.
      expect(SPARES.makingKeys()).toEqual([]);
      expect(SPARES.readyKeys()).toEqual([]);
    } finally {
      SPARES.max = max;
    }
  });
});

describe('late-bound WASI', () => {
  it('the grant-bound table names every WASI member that differs between two sets of grants', () => {
    const dir = mkdtempSync(join(root, 'wasi-'));
    const x = wasiImports({ env: { A: '1' }, networkAllow: [], preopen: dir, logFile: join(dir, 'x.log') }, 'c');
    const y = wasiImports({ env: { B: '2' }, networkAllow: ['example.com'], logFile: join(dir, 'y.log') }, 'c');
    expect(Object.keys(x).sort()).toEqual(Object.keys(y).sort());
    const differing: string[] = [];
    for (const iface of Object.keys(x)) {
      const [ox, oy] = [x[iface] as Record<string, unknown> | undefined, y[iface] as Record<string, unknown> | undefined];
      if (!ox || !oy) continue;
      for (const m of new Set([...Object.keys(ox), ...Object.keys(oy)])) if (ox[m] !== oy[m]) differing.push(`${iface}#${m}`);
    }
    const table = Object.entries(GRANT_BOUND).flatMap(([iface, ms]) => Object.keys(ms).map((m) => `${iface}#${m}`));
    expect(differing.length).toBeGreaterThan(0);
    for (const d of differing) expect(table, `${d} depends on the grants but is not late-bound`).toContain(d);
  });

  it('records a grant read (or host import) before the grants are bound, shows nothing until then, and the bound grants after', () => {
    const w = lateBoundWasi('c');
    const env = w.imports['wasi:cli/environment'] as { getEnvironment(): [string, string][]; getArguments(): string[] };
    expect(env.getArguments()).toEqual(['c']);
    expect(w.readBeforeBind).toEqual([]);
    expect(env.getEnvironment()).toEqual([]);
    expect(w.readBeforeBind).toEqual(['wasi:cli/environment#getEnvironment']);
    w.noteEarly('murmur:task/task#requestInput');
    w.bind({ env: { K: 'v' }, networkAllow: [] });
    expect(env.getEnvironment()).toEqual([['K', 'v']]);
    w.noteEarly('murmur:text/chunks#emitChunk');
    expect(w.readBeforeBind).toEqual(['wasi:cli/environment#getEnvironment', 'murmur:task/task#requestInput']);
    expect(() => w.bind({ env: {}, networkAllow: [] })).toThrow(/already bound/);
    // Grants given up front: bound from the start, nothing recorded as read early.
    const up = lateBoundWasi('c', undefined, { env: { K: 'now' }, networkAllow: [] });
    expect(up.bound).toBe(true);
    expect((up.imports['wasi:cli/environment'] as { getEnvironment(): [string, string][] }).getEnvironment()).toEqual([['K', 'now']]);
    expect(up.readBeforeBind).toEqual([]);
  });
});

describe('spare pool', () => {
  const workers: Worker[] = [];
  const exited = new Set<Worker>();
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.terminate()));
  });
  function fakeLaunch(readBeforeBind: string[] | Error): () => Promise<Launched> {
    return async () => {
      const worker = new Worker('setInterval(() => {}, 1000)', { eval: true });
      workers.push(worker);
      worker.once('exit', () => exited.add(worker));
      const { port1 } = new (await import('node:worker_threads')).MessageChannel();
      return {
        worker,
        slot: 0,
        release: () => port1.close(),
        mainPort: port1,
        flag: new Int32Array(new SharedArrayBuffer(4)),
        ready: readBeforeBind instanceof Error ? Promise.reject(readBeforeBind) : Promise.resolve(readBeforeBind),
      };
    };
  }
  const exitOf = (w: Worker): Promise<void> => (exited.has(w) ? Promise.resolve() : new Promise((r) => w.once('exit', () => r())));

  it('spares a component only from its second start, and never one that read a grant or failed while instantiating', async () => {
    const pool = new SparePool(4);
    pool.started('clean', fakeLaunch([]));
    pool.started('greedy', fakeLaunch(['wasi:cli/environment#getEnvironment']));
    pool.started('broken', fakeLaunch(new Error('not made: first start')));
    // A first start schedules nothing.
    expect(pool.makingKeys()).toEqual([]);
    expect(pool.readyKeys()).toEqual([]);
    pool.started('clean', fakeLaunch([]));
    pool.started('greedy', fakeLaunch(['wasi:cli/environment#getEnvironment']));
    pool.started('broken', fakeLaunch(new Error('host import murmur:task/task#requestInput failed: called before the grants were bound')));
    expect(await Promise.all(['clean', 'greedy', 'broken'].map((k) => pool.whenSettled(k)))).toEqual(['ready', 'refused', 'refused']);
    expect(pool.readyKeys()).toEqual(['clean']);
    expect(pool.isRefused('greedy')).toBe(true);
    expect(pool.isRefused('broken')).toBe(true);
    expect(pool.isRefused('clean')).toBe(false);
    expect(await pool.take('greedy')).toBeUndefined();
    expect(await pool.take('broken')).toBeUndefined();
    expect(await pool.take('clean')).toBeDefined();
    expect(await pool.take('clean')).toBeUndefined();
    await pool.drain();
  });

  it('an instance start waits for a spare on its way instead of instantiating beside it, and starts a scheduled one at once', async () => {
    const pool = new SparePool(4);
    let made = 0;
    // Each launch's instantiation finishes when the test opens its gate (gates[i] for the i-th slow()).
    const gates: Array<() => void> = [];
    const slow = (): (() => Promise<Launched>) => {
      const base = fakeLaunch([]);
      let open!: () => void;
      const ready = new Promise<string[]>((r) => (open = () => r([])));
      gates.push(open);
      return async () => {
        made++;
        return { ...(await base()), ready };
      };
    };
    pool.started('k', slow()); // a first start: nothing is made
    pool.started('k', slow()); // scheduled 300 ms out
    // Scheduled, not started: take() starts it now and waits for it, instead of coming back empty.
    const first = pool.take('k');
    expect(made).toBe(1);
    gates[1]!();
    expect(await first).toBeDefined();
    expect(made).toBe(1);
    // That start took a spare: the next one is made at once; a take while it instantiates waits.
    const making = once(pool, 'making');
    pool.started('k', slow(), true);
    await making;
    expect(made).toBe(2);
    expect(pool.readyKeys()).toEqual([]);
    const second = pool.take('k');
    gates[2]!();
    expect(await second).toBeDefined();
    expect(made).toBe(2);
    await pool.drain();
  });

  it('keeps at most its maximum, dropping (and stopping) the oldest spare', async () => {
    const pool = new SparePool(2);
    for (const k of ['k1', 'k2', 'k3']) {
      pool.started(k, fakeLaunch([]));
      pool.started(k, fakeLaunch([]));
      expect(await pool.whenSettled(k)).toBe('ready');
    }
    expect(pool.readyKeys()).toEqual(['k2', 'k3']);
    // k1's spare (the first worker made, after k1's second start) was stopped.
    await exitOf(workers[0]!);
    expect(workers.map((w) => exited.has(w))).toEqual([true, false, false]);
    await pool.drain();
    expect(pool.readyKeys()).toEqual([]);
  });
});

describe('worker flags', () => {
  it('a component worker gets the parent’s Node flags without its module loaders (an inherited --import tsx made every glue import ≈ 16× slower on Node 24)', () => {
    expect(
      workerExecArgv([
        '--import',
        'tsx',
        '--enable-source-maps',
        '--import=./x.mjs',
        '-r',
        'dotenv/config',
        '--no-warnings',
        '--experimental-loader',
        'y',
        '--loader=z',
      ]),
    ).toEqual(['--enable-source-maps', '--no-warnings']);
    expect(workerExecArgv([])).toEqual([]);
  });

  it('a runtime started with V8 heap options (the image entrypoint) still starts its workers: V8 options are left out of theirs', async () => {
    const parent = [
      '--max-semi-space-size=1',
      '--optimize-for-size',
      '--max_old_space_size=200',
      '--stack-size=2000',
      '--wasm-lazy-compilation',
      '--no-liftoff',
      '--no-maglev',
      '--no-opt',
      '--max-opt=2',
      '--no-sparkplug',
      '--flush-baseline-code',
      '--bytecode-old-age=2',
      '--enable-source-maps',
    ];
    expect(() => new Worker('1', { eval: true, execArgv: parent })).toThrow(/invalid execArgv/);
    const argv = workerExecArgv(parent);
    expect(argv).toEqual(['--enable-source-maps']);
    const w = new Worker('require("node:worker_threads").parentPort.postMessage("up")', { eval: true, execArgv: argv });
    expect(await new Promise((r) => w.once('message', r))).toBe('up');
    await w.terminate();
  });

  it("a runtime started with V8's GC tracing options (bench/task-cpu.ts --gc) still starts its workers: V8 traces their isolates anyway", () => {
    const parent = ['--trace-gc', '--trace-gc-nvp', '--trace_gc_verbose', '--enable-source-maps'];
    expect(() => new Worker('1', { eval: true, execArgv: parent })).toThrow(/invalid execArgv/);
    expect(workerExecArgv(parent)).toEqual(['--enable-source-maps']);
  });

  it('a runtime started with V8 options no list here names (--always-sparkplug, --no-lazy-feedback-allocation) still starts its workers: Node is asked which it refuses', async () => {
    const parent = ['--always-sparkplug', '--no-lazy-feedback-allocation', '--max-semi-space-size=1', '--enable-source-maps', '--stack-trace-limit=20'];
    for (const flag of parent.slice(0, 3)) expect(() => new Worker('1', { eval: true, execArgv: [flag] }), flag).toThrow(/invalid execArgv/);
    const argv = workerExecArgv(parent);
    expect(argv).toEqual(['--enable-source-maps']);
    const w = new Worker('require("node:worker_threads").parentPort.postMessage("up")', { eval: true, execArgv: argv });
    expect(await new Promise((r) => w.once('message', r))).toBe('up');
    await w.terminate();
  });

  it("a runtime started with the optimizer's tracing or a sized V8 thread pool (--trace-opt, --v8-pool-size) still starts its workers", () => {
    const parent = ['--trace-opt', '--trace-deopt', '--v8-pool-size=2', '--enable-source-maps'];
    for (const flag of parent.slice(0, 3)) expect(() => new Worker('1', { eval: true, execArgv: [flag] }), flag).toThrow(/invalid execArgv/);
    expect(workerExecArgv(parent)).toEqual(['--enable-source-maps']);
  });
});
