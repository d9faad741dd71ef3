/**
 * A component instance running in a worker thread, with its own grants: a thread of its own, or a
 * slot in a session's shared thread (thread.ts). Calls are serialized (a component instance is
 * single-threaded), each with a deadline; a guest that runs past it, traps or outgrows its memory
 * cap is discarded and the call rejected with a typed HostFault: its own worker is terminated, or
 * in a shared thread its slot dropped (a deadline stops the shared thread: nothing else can stop
 * a running guest). The next call starts a fresh instance (its in-memory state is lost, by design).
 */
import type { MessagePort, Worker } from 'node:worker_threads';
import { compiledModules } from './core-modules.ts';
import { DeadlineExceeded, GuestError, GuestTrap, HostFault } from './errors.ts';
import { classifyTrap } from './trap.ts';
import { importSpecFor, type HostImports } from './import-spec.ts';
import type { Grants, HostCallReply, HostCallRequest, NetworkDenial } from './protocol.ts';
import { shouldRetire } from './retire.ts';
import { SPARES } from './spares.ts';
import type { LoadedComponent } from './transpile-cache.ts';
import { POOL, launch, linkOf, send, type Launched } from './workers.ts';
import { RecentTimes, mainPolls } from './doorbell.ts';
import type { CallMessage } from './worker-link.ts';
import { componentSpinUs, type ComponentThread, type IdleMember } from './thread.ts';

export type { HostFn, HostImports } from './import-spec.ts';

export interface InstanceOptions {
  grants: Grants;
  imports?: HostImports;
  /** Default deadline per call. */
  deadlineMs: number;
  /** The manifest field the deadline comes from, named in the error (default capabilities.limits.deadline_seconds). */
  deadlineField?: string;
  /** Linear memory cap per core module. */
  memoryBytes: number;
  /** Told of each outgoing request the network grant refused (for the trace). */
  onNetworkDenied?: (d: NetworkDenial) => void;
  /**
   * Retire the instance between calls once its linear memory has grown this many bytes past where
   * it stood after its first call (host/retire.ts; drivers only: the next call starts fresh, so
   * in-memory state is lost). Undefined or 0: never.
   */
  retireAfterGrowthBytes?: number;
  /** Run in this shared thread (a session's driver and tools) instead of a worker of its own; no spares. */
  thread?: ComponentThread;
  /**
   * How long the worker polls for the next call after answering one, and the main thread for a
   * short call's answer, before either sleeps (µs; each only when its recent times say the message
   * is that close: host/doorbell.ts). Default: MURMUR_COMPONENT_SPIN_US, else 50 (0 in a process
   * that may run on one CPU only: host/thread.ts, componentSpinUs); 0 = never.
   */
  spinUs?: number;
}

export { classifyTrap, type TrapEvidence } from './trap.ts';

/** Component calls posted and not yet answered, across every instance (host/doorbell.ts: mainPolls). */
let callsInFlight = 0;

/** Stops the idle pooled workers and spares (tests and shutdown). */
export async function drainWorkerPool(): Promise<void> {
  await Promise.all([POOL.drain(), SPARES.drain()]);
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
  /** The current slot (its worker, its ports), and how to stop listening to its worker (a shared worker outlives it). */
  private launched: Launched | undefined;
  private unlisten: (() => void) | undefined;
  private ready: Promise<void> | undefined;
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Number of workers started (1 + restarts after faults). */
  starts = 0;
  /** Whether the current worker was a pre-instantiated spare (runtime/host/spares.ts). */
  fromSpare = false;
  /** Workers retired for memory growth (retireAfterGrowthBytes). */
  retired = 0;
  /** Calls that reached the worker while it polled after its previous answer (host/doorbell.ts). */
  callsPolled = 0;
  /** Answers the main thread read while polling for them, not after sleeping (host/doorbell.ts). */
  answersPolled = 0;
  /** Largest linear memory of the current worker after its latest call, and after its first. */
  memoryAfterCall = 0;
  private memoryBaseline: number | undefined;
  private readonly spinUs: number;
  /** How long recent calls ran in the worker: whether the next one is worth polling for. */
  private readonly guestTimes = new RecentTimes();

  constructor(component: LoadedComponent, opts: InstanceOptions) {
    this.component = component;
    this.opts = opts;
    importSpecFor(component, opts.imports ?? {}); // fail fast, before any worker starts
    this.spinUs = opts.spinUs ?? componentSpinUs();
    opts.thread?.join(this.idleMember);
  }

  /** What the shared thread asks when it goes idle (host/thread.ts): what this instance holds, and to let it go. */
  private readonly idleMember: IdleMember = {
    heldBytes: () => (this.launched ? this.memoryAfterCall : undefined),
    letGoIdle: () => this.kill('discard'),
  };

  private get worker(): Worker | undefined {
    return this.launched?.worker;
  }

  /** The worker thread the instance runs in now (tests, diagnostics: instances of a shared thread share it). */
  get threadId(): number | undefined {
    return this.worker?.threadId;
  }

  /** Starts the worker now instead of on the first call. */
  async start(): Promise<void> {
    const t = this.opts.thread;
    await (t ? t.serial(() => this.ensureWorker()) : this.ensureWorker());
  }

  /**
   * Calls an export, e.g. `call(['run', 'run'], input)` or `call(['lifecycle', 'onStage'], ev)`.
   * Resolves with the value; rejects with GuestError (a WIT `err`) or a HostFault.
   */
  call<T = unknown>(path: string[], args: unknown[], opts: { deadlineMs?: number } = {}): Promise<T> {
    const deadlineMs = opts.deadlineMs ?? this.opts.deadlineMs;
    const t = this.opts.thread;
    const run = this.queue.then(() => (t ? t.serial(() => this.callNow(path, args, deadlineMs), { call: true }) : this.callNow(path, args, deadlineMs)));
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
    const link = linkOf(worker);
    const id = this.nextId++;
    callsInFlight++;
    try {
      return await new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(id);
          this.kill('deadline');
          reject(new DeadlineExceeded(this.component.name, fn, deadlineMs, this.opts.deadlineField));
        }, remaining);
        this.pending.set(id, { resolve, reject, fn, timer });
        const poll = mainPolls(this.spinUs, this.guestTimes.fastest(), callsInFlight);
        const seen = link.seen();
        link.send(worker, { type: 'call', slot: this.launched!.slot, id, path, args, spinUs: link.callPollUs(this.spinUs) });
        // A call expected back within microseconds, with nothing else waiting on a component: the
        // answer is read as it comes instead of after this thread has slept (host/doorbell.ts).
        if (poll) {
          link.pollAnswers(seen, this.spinUs);
          if (!this.pending.has(id)) this.answersPolled++;
        }
      });
    } finally {
      callsInFlight--;
    }
  }

  private ensureWorker(deadlineMs = this.opts.deadlineMs): Promise<void> {
    // The shared thread was stopped (another instance's deadline): this slot went with it.
    if (this.worker && this.opts.thread && !this.opts.thread.holds(this.worker)) this.forget();
    // `ready` is set from the moment a spawn begins until the worker is gone: a call arriving while
    // start() (a session's pre-warm) is still instantiating waits for that worker, not a second one.
    if (this.ready) return this.ready;
    this.ready = this.spawn(deadlineMs);
    this.ready.catch(() => {
      this.ready = undefined;
    });
    return this.ready;
  }

  private async spawn(deadlineMs: number): Promise<void> {
    const c = this.component;
    const { memoryBytes, grants } = this.opts;
    const modules = await compiledModules(c, memoryBytes);
    const importSpec = importSpecFor(c, this.opts.imports ?? {});
    const key = `${c.sha256}:${memoryBytes}:${JSON.stringify(importSpec)}`;
    const thread = this.opts.thread;
    const spare = thread ? undefined : await SPARES.take(key);
    // A spare is already instantiated: it gets this instance's grants before any call can reach it
    // (messages to a worker arrive in order).
    if (spare) send(spare.worker, { type: 'bind', slot: spare.slot, grants });
    const started: Launched =
      spare ?? (thread ? await thread.attach(c, modules, importSpec, grants, deadlineMs) : await launch(c, modules, importSpec, grants, deadlineMs));
    const { worker, mainPort, flag, slot } = started;
    if (this.closed) {
      // Closed while it was starting (a pre-warm outlived its session): nobody will call it.
      if (thread) thread.detach(started);
      else void worker.terminate();
      throw new HostFault('crashed', 'E-HOST-007', c.name, 'instance is closed');
    }
    this.launched = started;
    this.starts++;
    this.memoryBaseline = undefined;
    this.fromSpare = spare !== undefined;
    mainPort.on('message', (req: HostCallRequest) => void this.serveHostCall(req, mainPort, flag));
    const onError = (e: unknown): void => this.onWorkerGone(worker, e);
    const onExit = (): void => this.onWorkerGone(worker, undefined);
    // A shared worker carries other instances' calls too: this instance hears its own slot's.
    const link = linkOf(worker);
    const onMessage = (msg: CallMessage): void => this.onWorkerMessage(msg);
    worker.on('error', onError);
    worker.on('exit', onExit);
    this.unlisten = () => {
      worker.off('error', onError);
      worker.off('exit', onExit);
      link.unroute(slot, onMessage);
    };
    try {
      await started.ready;
    } catch (e) {
      // Failed to instantiate: in a shared thread the worker lives on, without this slot.
      if (this.forget() && thread) started.release();
      throw e;
    }
    link.route(slot, onMessage);
    if (!thread) SPARES.started(key, () => launch(c, modules, importSpec, undefined, deadlineMs), spare !== undefined);
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

  /**
   * A one-way host import (protocol.ts ONE_WAY_IMPORTS): run now, before the call's answer that
   * follows it on the channel. The guest went on without waiting, so a failure has nobody to reach
   * but stderr (E-RUN-085); the call itself goes on.
   */
  private serveHostEvent(iface: string, fn: string, args: unknown[]): void {
    const fail = (e: unknown): void => {
      process.stderr.write(`mur: ${this.component.name}: host import ${iface}#${fn} failed: ${e instanceof Error ? e.message : String(e)} [E-RUN-085]\n`);
    };
    try {
      const impl = this.opts.imports?.[iface]?.[fn];
      if (!impl) throw new Error('no implementation');
      const r = impl(...args);
      if (r instanceof Promise) r.catch(fail);
    } catch (e) {
      fail(e);
    }
  }

  private onWorkerMessage(m: CallMessage): void {
    if (m.type === 'network-denied') {
      const { type: _t, slot: _s, ...d } = m;
      this.opts.onNetworkDenied?.(d);
      return;
    }
    if (m.type === 'host-event') {
      this.serveHostEvent(m.iface, m.fn, m.args);
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    this.guestTimes.note(m.guestUs);
    if (m.polled) this.callsPolled++;
    if (m.type !== 'trap') {
      // Retired before the caller hears back: calls are serialized, so the next one (queued behind
      // this answer) already finds the worker gone and starts a fresh one.
      this.memoryAfterCall = m.memoryBytes;
      this.memoryBaseline ??= m.memoryBytes;
      if (shouldRetire(this.memoryBaseline, m.memoryBytes, this.opts.retireAfterGrowthBytes)) {
        this.retired++;
        this.kill('discard');
      }
    }
    if (m.type === 'result') p.resolve(m.value);
    else if (m.type === 'guest-error') p.reject(new GuestError(this.component.name, p.fn, m.payload));
    else {
      // A trapped instance is poisoned for good: discard it.
      this.kill('discard');
      p.reject(this.classifyTrap(p.fn, m.message, m.memoryBytes, m.growFailedPages));
    }
  }

  private classifyTrap(fn: string, message: string, memoryBytes: number, growFailedPages: number): HostFault {
    return classifyTrap(this.component.name, fn, this.opts.memoryBytes, { message, memoryBytes, growFailedPages });
  }

  private onWorkerGone(worker: Worker, error: unknown): void {
    if (this.worker !== worker) return;
    this.forget();
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new GuestTrap(this.component.name, p.fn, error ? `worker crashed: ${(error as Error).message}` : 'worker exited'));
    }
  }

  /** Stops listening to the current worker: the next call starts a fresh instance. */
  private forget(): Launched | undefined {
    const l = this.launched;
    this.unlisten?.();
    this.unlisten = undefined;
    this.launched = undefined;
    this.ready = undefined;
    return l;
  }

  /**
   * Discards the instance: its own worker is terminated; in a shared thread its slot is dropped,
   * unless a guest is running past its deadline, which only stopping the thread can end.
   */
  private kill(why: 'deadline' | 'discard'): void {
    const thread = this.opts.thread;
    const l = this.forget();
    if (!l) return;
    if (!thread) void l.worker.terminate();
    else if (why === 'deadline') void thread.kill();
    else thread.detach(l);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.opts.thread?.leave(this.idleMember);
    const running = this.pending.size > 0;
    const thread = this.opts.thread;
    const l = this.forget();
    const w = l?.worker;
    // A call still running when the instance closes is answered now, not at its deadline.
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new HostFault('crashed', 'E-HOST-007', this.component.name, `${p.fn} was stopped: the instance closed`));
    }
    if (!l) return;
    if (!thread) await w!.terminate();
    // A call still running in a shared thread (a cancelled driver turn) can only be stopped with it.
    else if (running) void thread.kill();
    else thread.detach(l);
  }
}
