/**
 * A component instance run on the calling thread, for a process that has nothing else to do while
 * the guest runs (`mur run` of a script capsule: runtime/script/). No worker thread: a worker is a
 * V8 isolate of its own (≈ 8–13 MiB each, docs/component-host.md), and a capsule and the tool it
 * invokes were two. The guest's host imports are answered synchronously on the same stack (a
 * capsule's `invoke` runs the tool's instance inside the capsule's call), and its WASI I/O is the
 * in-thread backend of the worker's, loaded as a bundle of its own (inline-wasi.ts).
 *
 * The worker's guarantees hold: the memory cap is in the module bytes (core-modules.ts), a trap or
 * a memory-limit kill is told apart with the same evidence (trap.ts), and the deadline stops a
 * guest that never returns: each call runs under Node's `vm` watchdog (`timeout`), which ends the
 * running code (wasm loops included) with V8's TerminateExecution, as a worker's `terminate()`
 * does; `breakOnSigint` does the same for Ctrl-C. A call nested in another (a tool inside the
 * capsule) has its own deadline; the outer one still ends both. A faulted instance is discarded and
 * the next call starts a fresh one, as with a worker.
 *
 * What it cannot do: wait for the event loop. A host import must answer synchronously, and the
 * thread has no route for outgoing HTTP, so callers run only components whose imports are all
 * synchronous and whose network grant is empty (script/inline-run.ts decides).
 */
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { MurError } from '../errors.ts';
import { compiledModulesSync } from './core-modules.ts';
import { DeadlineExceeded, GuestError, HostFault } from './errors.ts';
import { GROW_FAILED_EXPORT } from './grow-probe.ts';
import { importSpecFor } from './import-spec.ts';
import type { InstanceOptions } from './instance.ts';
import type { Grants, NetworkDenial } from './protocol.ts';
import type { LoadedComponent } from './transpile-cache.ts';
import { classifyTrap } from './trap.ts';
import { bundledModule } from './bundled-module.ts';

type WasiImports = (g: Grants, component: string, onDenied?: (d: NetworkDenial) => void) => Record<string, unknown>;
type Instantiate = (
  get: (n: string) => WebAssembly.Module,
  imports: unknown,
  inst: (m: WebAssembly.Module, i: WebAssembly.Imports) => WebAssembly.Instance,
) => Record<string, unknown> | Promise<Record<string, unknown>>;

/**
 * What an instance run here takes: the worker instance's options (instance.ts) without those about
 * a worker (retiring, the thread, spinning). Its host imports must each return their answer, not a
 * promise.
 */
export type InlineOptions = Pick<InstanceOptions, 'grants' | 'imports' | 'deadlineMs' | 'deadlineField' | 'memoryBytes' | 'onNetworkDenied'>;

/** A component ready to be instantiated on this thread without waiting: its glue and the WASI module imported. */
export interface InlineComponent {
  component: LoadedComponent;
  instantiate: Instantiate;
  wasiImports: WasiImports;
}

let wasiModule: Promise<WasiImports> | undefined;

/** Imports what instantiating `c` on this thread needs (the only asynchronous step). */
export async function loadInline(c: LoadedComponent): Promise<InlineComponent> {
  wasiModule ??= bundledModule('inline-wasi').then(async (url) => ((await import(url)) as { wasiImports: WasiImports }).wasiImports);
  const [wasiImports, glue] = await Promise.all([wasiModule, import(pathToFileURL(c.jsPath).href) as Promise<{ instantiate: Instantiate }>]);
  return { component: c, instantiate: glue.instantiate, wasiImports };
}

/** Stopped by Ctrl-C while a guest ran on this thread: the caller's run is interrupted (E-RUN-020). */
export class GuestInterrupted extends MurError {
  constructor(component: string) {
    super('E-RUN-020', `interrupted while ${component} ran`);
    this.name = 'GuestInterrupted';
  }
}

const GUEST_CALL = Symbol.for('murmur.inline-guest-call');
let guardScript: vm.Script | undefined;

/**
 * Runs `fn` under a deadline on this thread: Node's vm watchdog ends it (and everything it called)
 * after `ms`. The script only calls the function it finds under a symbol of the global object: a
 * watchdog is attached to running a script, not to calling a function.
 */
function guarded<T>(fn: () => T, ms: number): T {
  guardScript ??= new vm.Script('globalThis[Symbol.for("murmur.inline-guest-call")]()', { filename: 'murmur-inline-guest' });
  const g = globalThis as Record<symbol, unknown>;
  const outer = g[GUEST_CALL];
  g[GUEST_CALL] = fn;
  try {
    return guardScript.runInThisContext({ timeout: Math.max(1, Math.ceil(ms)), breakOnSigint: true }) as T;
  } finally {
    g[GUEST_CALL] = outer;
  }
}

function isThenable(v: unknown): boolean {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

function asynchronous(component: string, what: string): HostFault {
  return new HostFault(
    'crashed',
    'E-RUN-090',
    component,
    `${what} answered asynchronously, which a component run on the calling thread cannot wait for`,
    'run it in a component worker (mur serve does)',
  );
}

interface Live {
  exports: Record<string, unknown>;
  memories: WebAssembly.Memory[];
  growFailed: WebAssembly.Global[];
}

export class InlineInstance {
  readonly component: LoadedComponent;
  private live: Live | undefined;
  private closed = false;
  /** Instances started (1 + restarts after faults). */
  starts = 0;

  constructor(
    private readonly loaded: InlineComponent,
    private readonly opts: InlineOptions,
  ) {
    this.component = loaded.component;
    importSpecFor(this.component, opts.imports ?? {}); // fail fast, before anything runs
  }

  /**
   * Calls an export, e.g. `call(['run', 'run'], [input])`, and returns its value. Throws GuestError
   * (a WIT `err`), a HostFault (deadline, trap, memory cap, a host import failing) or
   * GuestInterrupted (Ctrl-C).
   */
  call<T = unknown>(path: string[], args: unknown[], o: { deadlineMs?: number } = {}): T {
    const name = this.component.name;
    if (this.closed) throw new HostFault('crashed', 'E-HOST-007', name, 'instance is closed');
    const deadlineMs = o.deadlineMs ?? this.opts.deadlineMs;
    const started = performance.now();
    const live = this.live ?? this.start(deadlineMs);
    let self: unknown;
    let fn: unknown = live.exports;
    for (const p of path) {
      self = fn;
      fn = (fn as Record<string, unknown> | undefined)?.[p];
    }
    const fnName = path.join('.');
    if (typeof fn !== 'function') throw this.fault(live, fnName, new Error(`the component has no export ${fnName}`));
    // Grow failures count per call: one an earlier call recovered from is no evidence now.
    for (const g of live.growFailed) g.value = 0;
    let value: unknown;
    try {
      value = guarded(() => (fn as (...a: unknown[]) => unknown).apply(self, args), deadlineMs - (performance.now() - started));
    } catch (e) {
      const err = e as { payload?: unknown };
      if (err && typeof err === 'object' && 'payload' in err) throw new GuestError(name, fnName, err.payload);
      throw this.fault(live, fnName, e, deadlineMs);
    }
    if (isThenable(value)) throw this.fault(live, fnName, asynchronous(name, fnName));
    return value as T;
  }

  /** Instantiates the component now (its start functions run under the deadline too). */
  private start(deadlineMs: number): Live {
    const { component: c, instantiate, wasiImports } = this.loaded;
    const { grants, memoryBytes } = this.opts;
    const spec = importSpecFor(c, this.opts.imports ?? {});
    const live: Live = { exports: {}, memories: [], growFailed: [] };
    const modules = compiledModulesSync(c, memoryBytes);
    const imports: Record<string, unknown> = { ...wasiImports(grants, c.name, this.opts.onNetworkDenied) };
    for (const [iface, fns] of Object.entries(spec)) {
      const obj: Record<string, (...a: unknown[]) => unknown> = {};
      for (const fn of fns) obj[fn] = (...args: unknown[]) => this.hostCall(iface, fn, args);
      imports[iface] = obj;
    }
    let exports: Record<string, unknown> | Promise<Record<string, unknown>>;
    try {
      exports = guarded(
        () =>
          instantiate(
            (n) => {
              const m = modules[n];
              if (!m) throw new Error(`missing core module ${n}`);
              return m;
            },
            imports,
            (module, imp) => {
              const inst = new WebAssembly.Instance(module, imp);
              for (const v of Object.values(inst.exports)) if (v instanceof WebAssembly.Memory) live.memories.push(v);
              const g = inst.exports[GROW_FAILED_EXPORT];
              if (g instanceof WebAssembly.Global) live.growFailed.push(g);
              return inst;
            },
          ),
        deadlineMs,
      );
    } catch (e) {
      throw this.fault(live, 'instantiate', e, deadlineMs);
    }
    if (isThenable(exports)) throw asynchronous(c.name, 'its instantiation');
    live.exports = exports as Record<string, unknown>;
    this.live = live;
    this.starts++;
    return live;
  }

  /**
   * A host import, answered here: what the worker's bridge does (host/worker.ts hostCall and
   * instance.ts serveHostCall), without the thread hop. A thrown non-Error value is the WIT `err`
   * payload; an Error is a host fault, which traps the guest.
   */
  private hostCall(iface: string, fn: string, args: unknown[]): unknown {
    const impl = this.opts.imports?.[iface]?.[fn];
    let value: unknown;
    try {
      if (!impl) throw new Error(`no implementation for ${iface}#${fn}`);
      value = impl(...args);
    } catch (e) {
      if (e instanceof Error) throw new Error(`host import ${iface}#${fn} failed: ${e.message}`);
      throw e;
    }
    if (isThenable(value)) {
      (value as Promise<unknown>).catch(() => undefined);
      throw new Error(`host import ${iface}#${fn} failed: ${asynchronous(this.component.name, `${iface}#${fn}`).message}`);
    }
    return value;
  }

  /** The fault a failed call or instantiation was; the instance is discarded (the next call starts afresh). */
  private fault(live: Live, fn: string, e: unknown, deadlineMs = this.opts.deadlineMs): unknown {
    if (this.live === live) this.live = undefined;
    const code = (e as { code?: unknown } | null)?.code;
    if (code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return new DeadlineExceeded(this.component.name, fn, deadlineMs, this.opts.deadlineField);
    if (code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') return new GuestInterrupted(this.component.name);
    if (e instanceof HostFault || e instanceof GuestInterrupted) return e;
    let memoryBytes = 0;
    for (const m of live.memories) memoryBytes = Math.max(memoryBytes, m.buffer.byteLength);
    let growFailedPages = 0;
    for (const g of live.growFailed) growFailedPages = Math.max(growFailedPages, (g.value as number) >>> 0);
    const message = String((e as { message?: unknown } | null)?.message ?? e);
    return classifyTrap(this.component.name, fn, this.opts.memoryBytes, { message, memoryBytes, growFailedPages });
  }

  /** Lets go of the instance (its memories go with the next collection). */
  close(): void {
    this.closed = true;
    this.live = undefined;
  }
}
