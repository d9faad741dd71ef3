/**
 * A component instance running in its own worker thread, with its own grants. Calls are serialized
 * (a component instance is single-threaded), each with a deadline; a guest that runs past it, traps
 * or outgrows its memory cap has its worker terminated and the call rejected with a typed HostFault.
 * The next call starts a fresh worker (the component's in-memory state is lost, by design).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import esbuild from 'esbuild';
import { PROJECT_ROOT } from '../wit/packages.ts';
import { dirname, join } from 'node:path';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { capMemory } from './memory-cap.ts';
import { ComponentLoadError, DeadlineExceeded, GuestError, GuestTrap, HostFault, HostImportFailed, MemoryLimitExceeded } from './errors.ts';
import type { FromWorker, Grants, HostCallReply, HostCallRequest, ImportSpec, WorkerInit } from './protocol.ts';
import type { LoadedComponent } from './transpile-cache.ts';

export type HostFn = (...args: any[]) => unknown | Promise<unknown>;
/** Host imports by unversioned interface name, functions by jco's camelCase name. */
export type HostImports = Record<string, Record<string, HostFn>>;

export interface InstanceOptions {
  grants: Grants;
  imports?: HostImports;
  /** Default deadline per call. */
  deadlineMs: number;
  /** Linear memory cap per core module. */
  memoryBytes: number;
}

const here = fileURLToPath(new URL('.', import.meta.url));
const BOOT = join(here, 'worker-boot.mjs');
const ENTRY = workerEntry();

/**
 * The worker's module. From compiled JavaScript (dist/) it is worker.js beside this file. From the
 * TypeScript sources it is bundled once to plain JavaScript (cached by source hash): running it
 * through the tsx loader instead would route every import in the worker through the loader, which
 * costs ≈ 180 ms per component glue module (measured) against ≈ 10 ms for a plain import.
 */
function workerEntry(): string {
  if (!import.meta.url.endsWith('.ts')) return new URL('./worker.js', import.meta.url).href;
  const sources = ['worker.ts', 'wasi.ts', 'protocol.ts', '../net/allowlist.ts'].map((f) => readFileSync(join(here, f)));
  const hash = createHash('sha256');
  for (const b of sources) hash.update(b);
  // Beside the component cache, which is writable wherever the runtime runs (a read-only image sets
  // MURMUR_COMPONENT_CACHE under its writable volume).
  const base = process.env.MURMUR_COMPONENT_CACHE ? dirname(process.env.MURMUR_COMPONENT_CACHE) : join(PROJECT_ROOT, '.cache');
  const out = join(base, 'host', `worker-${hash.digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(out)) {
    const tmp = `${out}.${process.pid}.tmp.mjs`;
    mkdirSync(dirname(out), { recursive: true });
    const built = esbuild.buildSync({
      entryPoints: [join(here, 'worker.ts')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      write: false,
      logLevel: 'error',
    });
    // Packages stay external but are pinned to absolute file URLs, so the bundle runs wherever the
    // cache lives (it may sit outside the project, with no node_modules above it).
    const code = built.outputFiles[0]!.text.replace(/(from\s*|import\s*\(\s*)"((?:@[^"/]+\/)?[^".][^"]*)"/g, (m, pre: string, spec: string) =>
      spec.startsWith('node:') ? m : `${pre}${JSON.stringify(import.meta.resolve(spec))}`,
    );
    writeFileSync(tmp, code);
    renameSync(tmp, out);
  }
  return pathToFileURL(out).href;
}

/**
 * Booted workers waiting for a component: booting (thread start, loader, WASI shim import) is the
 * bulk of an instance's start, so it happens ahead of time, off the critical path.
 */
class WorkerPool {
  private idle: { worker: Worker; booted: Promise<void> }[] = [];
  constructor(private readonly target: number) {}

  private boot(): { worker: Worker; booted: Promise<void> } {
    const worker = new Worker(BOOT, {
      workerData: { entry: ENTRY },
      // Bounds the JS glue's heap; wasm linear memory is capped in the module bytes instead.
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 },
      stdout: true,
      stderr: true,
      env: {},
    });
    worker.stdout.resume();
    worker.stderr.resume();
    // An idle pooled worker must not keep the process alive.
    worker.unref();
    const booted = new Promise<void>((resolve, reject) => {
      const onMsg = (m: FromWorker): void => {
        if (m.type === 'booted') {
          worker.off('message', onMsg);
          resolve();
        }
      };
      worker.on('message', onMsg);
      worker.once('error', reject);
      worker.once('exit', () => reject(new Error('worker exited while booting')));
    });
    booted.catch(() => {});
    return { worker, booted };
  }

  /** A booted worker (waits for one if none is ready), and starts booting its replacement. */
  async take(): Promise<Worker> {
    const next = this.idle.shift() ?? this.boot();
    // Boot the replacement a moment later, so it does not compete for the CPU with the
    // instantiation this worker is about to do (these machines have 2 cores).
    setTimeout(() => {
      while (this.idle.length < this.target) this.idle.push(this.boot());
    }, 300).unref();
    await next.booted;
    next.worker.ref();
    return next.worker;
  }

  async drain(): Promise<void> {
    const all = this.idle.splice(0);
    await Promise.all(all.map((w) => w.worker.terminate()));
  }
}

const POOL = new WorkerPool(Number(process.env.MURMUR_WORKER_POOL ?? 1));

/** Stops the idle pooled workers (tests and shutdown). */
export function drainWorkerPool(): Promise<void> {
  return POOL.drain();
}

/** Compiled, memory-capped core modules per (component, cap): compile once, instantiate many. */
const moduleCache = new Map<string, Promise<Record<string, WebAssembly.Module>>>();

function compiledModules(c: LoadedComponent, cap: number): Promise<Record<string, WebAssembly.Module>> {
  const key = `${c.sha256}:${cap}`;
  let p = moduleCache.get(key);
  if (!p) {
    p = (async () => {
      const out: Record<string, WebAssembly.Module> = {};
      for (const f of c.coreFiles) {
        try {
          out[f] = await WebAssembly.compile(capMemory(readFileSync(join(c.dir, f)), cap) as Uint8Array<ArrayBuffer>);
        } catch (e) {
          throw new ComponentLoadError(c.name, `core module ${f} does not compile under a ${cap} byte memory cap: ${(e as Error).message}`);
        }
      }
      return out;
    })();
    moduleCache.set(key, p);
    p.catch(() => moduleCache.delete(key));
  }
  return p;
}

/** Which host imports the component needs beyond WASI; fails naming any the host does not provide. */
function importSpecFor(c: LoadedComponent, imports: HostImports): ImportSpec {
  const spec: ImportSpec = {};
  for (const iface of c.imports) {
    if (iface.startsWith('wasi:')) continue;
    const impl = imports[iface];
    if (!impl) {
      throw new ComponentLoadError(c.name, `imports ${iface}, which the runtime does not provide to this kind of component`,
        `provided here: ${Object.keys(imports).sort().join(', ') || 'no host interfaces'}`);
    }
    spec[iface] = Object.keys(impl);
  }
  return spec;
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
  fn: string;
  timer: NodeJS.Timeout;
}

export class ComponentInstance {
  readonly component: LoadedComponent;
  readonly opts: InstanceOptions;
  private worker: Worker | undefined;
  private ready: Promise<void> | undefined;
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Number of workers started (1 + restarts after faults). */
  starts = 0;

  constructor(component: LoadedComponent, opts: InstanceOptions) {
    this.component = component;
    this.opts = opts;
    importSpecFor(component, opts.imports ?? {}); // fail fast, before any worker starts
  }

  /** Starts the worker now instead of on the first call. */
  async start(): Promise<void> {
    await this.ensureWorker();
  }

  /**
   * Calls an export, e.g. `call(['run', 'run'], input)` or `call(['lifecycle', 'onStage'], ev)`.
   * Resolves with the value; rejects with GuestError (a WIT `err`) or a HostFault.
   */
  call<T = unknown>(path: string[], args: unknown[], opts: { deadlineMs?: number } = {}): Promise<T> {
    const run = this.queue.then(() => this.callNow(path, args, opts.deadlineMs ?? this.opts.deadlineMs));
    this.queue = run.catch(() => undefined);
    return run as Promise<T>;
  }

  private async callNow(path: string[], args: unknown[], deadlineMs: number): Promise<unknown> {
    if (this.closed) throw new HostFault('crashed', 'E-HOST-007', this.component.name, 'instance is closed');
    const fn = path.join('.');
    const started = Date.now();
    await this.ensureWorker(deadlineMs);
    const remaining = Math.max(1, deadlineMs - (Date.now() - started));
    const worker = this.worker!;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.kill();
        reject(new DeadlineExceeded(this.component.name, fn, deadlineMs));
      }, remaining);
      this.pending.set(id, { resolve, reject, fn, timer });
      worker.postMessage({ type: 'call', id, path, args });
    });
  }

  private ensureWorker(deadlineMs = this.opts.deadlineMs): Promise<void> {
    if (this.worker && this.ready) return this.ready;
    this.ready = this.spawn(deadlineMs);
    this.ready.catch(() => {
      this.ready = undefined;
    });
    return this.ready;
  }

  private async spawn(deadlineMs: number): Promise<void> {
    const c = this.component;
    const modules = await compiledModules(c, this.opts.memoryBytes);
    const imports = this.opts.imports ?? {};
    const importSpec = importSpecFor(c, imports);
    const flagBuf = new SharedArrayBuffer(4);
    const flag = new Int32Array(flagBuf);
    const { port1: mainPort, port2: hostPort } = new MessageChannel();
    const init: WorkerInit = { jsPath: c.jsPath, component: c.name, modules, grants: this.opts.grants, importSpec, flag: flagBuf, hostPort };
    const worker = await POOL.take();
    worker.postMessage({ type: 'init', init }, [hostPort]);
    this.worker = worker;
    this.starts++;
    mainPort.on('message', (req: HostCallRequest) => void this.serveHostCall(req, mainPort, flag));
    worker.on('error', (e) => this.onWorkerGone(worker, e));
    worker.on('exit', () => {
      mainPort.close();
      this.onWorkerGone(worker, undefined);
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new DeadlineExceeded(c.name, 'instantiate', deadlineMs));
      }, deadlineMs);
      const onMsg = (m: FromWorker): void => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          worker.off('message', onMsg);
          worker.on('message', (msg: FromWorker) => this.onWorkerMessage(msg));
          resolve();
        } else if (m.type === 'init-error') {
          clearTimeout(timer);
          this.kill();
          reject(new ComponentLoadError(c.name, `failed to instantiate: ${m.message}`));
        }
      };
      worker.on('message', onMsg);
      worker.once('exit', () => {
        clearTimeout(timer);
        reject(new ComponentLoadError(c.name, 'worker exited during instantiation'));
      });
    });
  }

  private async serveHostCall(req: HostCallRequest, port: MessagePort, flag: Int32Array): Promise<void> {
    const impl = this.opts.imports?.[req.iface]?.[req.fn];
    let reply: HostCallReply;
    try {
      if (!impl) throw new Error(`no implementation for ${req.iface}#${req.fn}`);
      reply = { ok: await impl(...req.args) };
    } catch (e) {
      if (e instanceof HostFault) reply = { fault: e.message };
      else if (e instanceof Error) reply = { fault: e.message };
      else reply = { err: e }; // a thrown non-Error value is the WIT `err` payload
    }
    try {
      port.postMessage(reply);
    } catch {
      reply = { fault: 'host import returned a value that cannot cross to the component' };
      port.postMessage(reply);
    }
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  }

  private onWorkerMessage(m: FromWorker): void {
    if (m.type !== 'result' && m.type !== 'guest-error' && m.type !== 'trap') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.type === 'result') p.resolve(m.value);
    else if (m.type === 'guest-error') p.reject(new GuestError(this.component.name, p.fn, m.payload));
    else {
      // A trapped instance is poisoned for good: discard it.
      this.kill();
      p.reject(this.classifyTrap(p.fn, m.message, m.memoryBytes));
    }
  }

  private classifyTrap(fn: string, message: string, memoryBytes: number): HostFault {
    const cap = this.opts.memoryBytes;
    // A guest that ran into the cap traps when its allocator's memory.grow fails. Count it as a
    // memory-limit kill when the trap happened with memory near the cap.
    if (memoryBytes >= cap - Math.max(32 * 1048576, cap / 4) || /out of memory/i.test(message)) {
      return new MemoryLimitExceeded(this.component.name, fn, cap, memoryBytes);
    }
    if (/host import .* failed/.test(message)) {
      const m = /host import (\S+) failed: (.*)/.exec(message);
      return new HostImportFailed(this.component.name, m?.[1] ?? 'unknown', m?.[2] ?? message);
    }
    return new GuestTrap(this.component.name, fn, message);
  }

  private onWorkerGone(worker: Worker, error: unknown): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.ready = undefined;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new GuestTrap(this.component.name, p.fn, error ? `worker crashed: ${(error as Error).message}` : 'worker exited'));
    }
  }

  private kill(): void {
    const w = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    if (w) void w.terminate();
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    // A call still running when the instance closes is answered now, not at its deadline.
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new HostFault('crashed', 'E-HOST-007', this.component.name, `${p.fn} was stopped: the instance closed`));
    }
    if (w) await w.terminate();
  }
}
