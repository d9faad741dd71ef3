/**
 * One worker thread for several component instances of a session: the driver and the tools.
 *
 * Why: a worker thread is a V8 isolate with Node and the WASI shim loaded in it, 10 MiB of RSS on
 * Node 20 and 15.6 MiB on Node 24 (the image's) before any component runs (measured), and a capsule
 * with a driver and one tool paid for two. The agent loop calls them one at a time (a driver turn,
 * then its tool calls in order), so sharing a thread costs them no concurrency. Hooks keep threads
 * of their own: an async hook runs beside the loop, and its in-memory state must outlive anything
 * another component does (the spec, hooks.md: "an async hook is one reused instance per session").
 *
 * What is shared is the thread, not state: each instance has its own slot (glue instance, linear
 * memories, grants, host-call channel; worker.ts). Calls and instantiations into the thread run one
 * at a time in the order they were made ({@link ComponentThread.serial}), so each deadline starts
 * when its own work does. A trap, a retirement or a close drops only that instance's slot. A
 * deadline, though, can only be enforced by stopping the thread: the thread's other instances then
 * lose their in-memory state too, and each starts afresh on its next call.
 *
 * Idle: a thread with no call or instantiation for `idleMs` (MURMUR_COMPONENT_IDLE_MS, default
 * 30 000) keeps what is cheap to keep and costly to start again, and lets go of the rest:
 * - an instance whose linear memory is above `keepBytes` (MURMUR_COMPONENT_IDLE_KEEP_MIB, default
 *   4: a component carrying a JavaScript engine holds ≈ 9 MiB and more, a C or Rust one 0.1–1 MiB)
 *   is dropped, and instantiated afresh by its next call;
 * - if no instance is left, the worker goes too (as after a deadline), and the next call starts a
 *   fresh one;
 * - otherwise the worker stays with its small instances and collects its garbage (a last-resort
 *   GC of its isolate: what the calls left behind and the dropped instances' memories), and the
 *   process gives the freed memory back (runtime/memory.ts);
 * - but a worker that has run no call since it started (only instantiations: `mur serve`'s
 *   pre-warm) goes whatever its instances hold. A pod started and not called (a Capsule nobody
 *   uses yet) keeps no second isolate, ≈ 9–10 MiB of its private memory (quickstart pod on the real
 *   node, docs/measurements/memory.md); a woken pod, whose first task arrives seconds after the
 *   pre-warm, and a pod that has served keep the thread as above.
 * Why: starting the worker again is most of the price of a task after a pause (an isolate and
 * Node's bootstrap, ≈ 20 ms on Node 24, the WASI shim's import, ≈ 10 ms, then each instance:
 * 40–80 ms in all on a shared 2-core machine, measured in docs/measurements/memory.md), while
 * keeping it costs a pod ≈ 13 MiB of private memory (the isolate, 15.6 MiB on Node 24 before any
 * component runs). Nothing a driver or tool keeps between calls is promised to survive (only an
 * async hook's state is, hooks.md, and hooks never run here). A call waiting on the host (a tool's
 * request-input) is a call in progress: the thread is not idle while it waits.
 *
 * Quiet: long before that, `settleMs` (MURMUR_SETTLE_MS, default 500) after the last call, the
 * worker collects its garbage with its bytecode kept and the process settles (runtime/memory.ts):
 * nothing is let go, and the memory the task left is given back within a second of its end rather
 * than at the idle release. Not when `settleMs` is not below `idleMs` (the idle release comes
 * first and does more).
 * A settle costs the worker a last-resort collection and the main isolate a scavenge (why not
 * more there: runtime/memory.ts), tens of ms of the process's CPU in the image, GC helper threads
 * included (a warm task ≈ 9), and pays off only if the quiet lasts: so when a call comes within
 * {@link SETTLE_BACKOFF} settle delays of a settle, the delay doubles (up to `idleMs`), and a
 * quiet period that outlasts that many delays sets it back to `settleMs`. Calls
 * every second or two then stop settling after two or three of them, and at any pace a settle
 * comes at most once per five delays of wall time (≤ 2.4 % of a core at 500 ms).
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { MurError } from '../errors.ts';
import { envNonNegative } from '../env-number.ts';
import { DEFAULT_SETTLE_MS, releaseWhenSettled, settle as settleProcess, type Released } from '../memory.ts';
import { IdleTimer } from '../idle-timer.ts';
import type { FromWorker, Grants, ImportSpec } from './protocol.ts';
import type { LoadedComponent } from './transpile-cache.ts';
import { POOL, instantiateIn, send, type Launched } from './workers.ts';

export interface ThreadOptions {
  /** Goes idle after this long without a call (ms; 0 = never; default 30 000): see the header. */
  idleMs?: number;
  /** Instances holding more linear memory than this (bytes) are dropped when the thread goes idle (default 4 MiB). */
  keepBytes?: number;
  /** Settles this long after the last call (ms; 0 = never; default 500): see the header. */
  settleMs?: number;
}

/** What the thread asks of an instance in it when it goes idle (host/instance.ts). */
export interface IdleMember {
  /** The linear memory the instance holds (bytes), or undefined while it holds no slot. */
  heldBytes(): number | undefined;
  /** Drops the instance's slot: its next call instantiates it afresh. */
  letGoIdle(): void;
}

/** What a thread did when it went idle: let its worker go, or kept it (with `dropped` instances let go). */
export type IdleOutcome = { stopped: true } | { stopped: false; dropped: number; heapUsed: number };

export class ComponentThread {
  private worker: Promise<Worker> | undefined;
  /** The worker once started (undefined from the moment it is stopped). */
  private current: Worker | undefined;
  private nextSlot = 1;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Workers started for this thread (1 + restarts after a deadline or an idle stop). */
  starts = 0;
  /** Workers let go for being idle. */
  idleStops = 0;
  /** Idle periods the worker was kept through (its garbage collected). */
  idleCollects = 0;
  /** Quiet periods the thread settled in (its worker's garbage collected, bytecode kept). */
  settles = 0;
  /** Calls and instantiations queued or running: the thread is idle only at 0. */
  private inFlight = 0;
  /** Calls (not instantiations) run by the current worker: none at idle lets it go (see the header). */
  private callsInWorker = 0;
  private readonly idle: IdleTimer;
  private readonly idleWaiters: ((o: IdleOutcome) => void)[] = [];
  private quiet: IdleTimer;
  private readonly settleWaiters: ((r: Settled) => void)[] = [];
  private readonly settleMs: number;
  private readonly idleMs: number;
  /** The settle delay now: `settleMs`, or more after settles a call soon followed (see the header). */
  private delay: number;
  /** When the last settle ended (performance.now()), until the next call looks at it. */
  private settledAt: number | undefined;
  private readonly keepBytes: number;
  private readonly members = new Set<IdleMember>();

  constructor(opts: ThreadOptions = {}) {
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.settleMs = this.delay = opts.settleMs ?? DEFAULT_SETTLE_MS;
    this.idle = new IdleTimer(this.idleMs, () => this.onIdle());
    this.quiet = this.quietTimer();
    this.keepBytes = opts.keepBytes ?? DEFAULT_KEEP_MIB * 1048576;
  }

  /** An instance runs in this thread: asked what it holds when the thread goes idle (until it leaves). */
  join(m: IdleMember): void {
    this.members.add(m);
  }

  leave(m: IdleMember): void {
    this.members.delete(m);
  }

  /**
   * Runs `fn` once everything queued before it has finished: one guest runs in the thread at a
   * time, so a call's deadline does not count another instance's time. `call`: `fn` calls an
   * export (not only instantiates): the worker has served.
   */
  serial<T>(fn: () => Promise<T>, opts: { call?: boolean } = {}): Promise<T> {
    this.inFlight++;
    this.idle.cancel();
    this.quiet.cancel();
    if (this.settledAt !== undefined) this.paceSettles(performance.now() - this.settledAt);
    const run = this.queue.then(() => {
      if (opts.call) this.callsInWorker++;
      return fn();
    });
    this.queue = run
      .catch(() => undefined)
      .then(() => {
        if (--this.inFlight === 0 && !this.closed && this.worker) {
          this.idle.touch();
          this.quiet.touch();
        }
      });
    return run;
  }

  /** Resolves once the thread has next gone idle, with what it did (tests, diagnostics). */
  nextIdle(): Promise<IdleOutcome> {
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** The settle delay now (ms): `settleMs`, or more while settles were soon followed by calls (see the header). */
  get settleDelayMs(): number {
    return this.delay;
  }

  /** A settle's timer for the delay now: none where the idle release comes first. */
  private quietTimer(): IdleTimer {
    return new IdleTimer(this.idleMs > 0 && this.delay >= this.idleMs ? 0 : this.delay, () => this.onQuiet());
  }

  /** A call came `since` ms after the last settle ended: double the delay if that was soon, else back to `settleMs`. */
  private paceSettles(since: number): void {
    this.settledAt = undefined;
    const cap = this.idleMs > 0 ? this.idleMs : DEFAULT_IDLE_MS;
    const next = since < SETTLE_BACKOFF * this.delay ? Math.min(this.delay * 2, cap) : this.settleMs;
    if (next === this.delay) return;
    this.delay = next;
    this.quiet = this.quietTimer();
  }

  /** Resolves once the thread has next settled, with the worker's heap after it and what the process gave back (tests, diagnostics). */
  nextSettle(): Promise<Settled> {
    return new Promise((r) => this.settleWaiters.push(r));
  }

  /** Whether going idle is scheduled (nothing in flight, a worker running, idleMs > 0). */
  get idleStopPending(): boolean {
    return this.idle.running;
  }

  private onIdle(): void {
    const worker = this.current;
    if (this.inFlight > 0 || this.closed || !this.worker || !worker) return;
    let dropped = 0;
    let kept = 0;
    for (const m of this.members) {
      const held = m.heldBytes();
      if (held === undefined) continue;
      if (this.callsInWorker === 0 || this.keepBytes === 0 || held > this.keepBytes) {
        m.letGoIdle();
        dropped++;
      } else kept++;
    }
    const settle = (o: IdleOutcome): void => {
      for (const w of this.idleWaiters.splice(0)) w(o);
    };
    if (kept === 0) {
      this.idleStops++;
      // Its allocations are freed once the thread has ended: handed back to the kernel then
      // (runtime/memory.ts), with whatever else goes idle about now.
      void this.kill().then(() => releaseWhenSettled('component thread'));
      settle({ stopped: true });
      return;
    }
    this.idleCollects++;
    void collectIn(worker, false).then((c) => {
      if (c === undefined) return;
      releaseWhenSettled('component thread garbage');
      settle({ stopped: false, dropped, heapUsed: c.heapUsed });
    });
  }

  /** No call for `settleMs`: the worker collects its garbage, then the process settles (see the header). */
  private onQuiet(): void {
    const worker = this.current;
    if (this.inFlight > 0 || this.closed || !worker) return;
    void collectIn(worker, true).then((c) => {
      // A call that came meanwhile finds the worker collected; the main isolate's part waits for
      // the next quiet period rather than run beside that call.
      if (c === undefined || this.inFlight > 0 || this.closed) return;
      this.settles++;
      const released = settleProcess('component thread', c.ms);
      // The settle after a pre-warm (no call yet) paces nothing: the first task comes when it comes.
      if (this.callsInWorker > 0) this.settledAt = performance.now();
      for (const w of this.settleWaiters.splice(0)) w({ ...c, released });
    });
  }

  /** Instantiates a component in a new slot (in the thread's worker, started if there is none). */
  async attach(c: LoadedComponent, modules: Record<string, WebAssembly.Module>, importSpec: ImportSpec, grants: Grants, deadlineMs: number): Promise<Launched> {
    if (this.closed) throw new Error('the component thread is closed');
    let first = false;
    if (!this.worker) {
      first = true;
      this.starts++;
      // No booted replacement for this one: the thread starts again only after a deadline, or
      // after an idle period that outlasts the pool's wait (MURMUR_WORKER_IDLE_MS), so a spare
      // would only sit there, a whole isolate, through the seconds after the task.
      const w = POOL.take({ replenish: false });
      this.worker = w;
      w.then(
        (worker) => {
          // Each instance in the thread listens to its worker (its exit, its slot's messages) while
          // its slot lives: as many listeners as instances, which may pass Node's warning level of 10.
          worker.setMaxListeners(0);
          worker.once('exit', () => {
            if (this.worker === w) {
              this.worker = undefined;
              this.callsInWorker = 0;
            }
            if (this.current === worker) this.current = undefined;
          });
        },
        () => {
          if (this.worker === w) this.worker = undefined;
        },
      );
    }
    const worker = await this.worker;
    this.current = worker;
    return instantiateIn(worker, this.nextSlot++, c, modules, importSpec, grants, deadlineMs, { withNet: first, ownWorker: false });
  }

  /** Drops an instance's slot: the thread lets go of everything it held. */
  detach(l: Launched): void {
    l.release();
    try {
      send(l.worker, { type: 'drop', slot: l.slot });
    } catch {
      /* the worker is gone already */
    }
  }

  /** Stops the thread (a deadline passed in it, or it sat idle): every instance in it starts afresh on its next call. */
  kill(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.callsInWorker = 0;
    this.current = undefined;
    return w
      ? w.then(
          (worker) => worker.terminate().then(() => undefined),
          () => undefined,
        )
      : Promise.resolve();
  }

  /**
   * Whether `w` is the thread's worker still: a stopped one may not have exited yet, and an
   * instance must not post its next call there.
   */
  holds(w: Worker): boolean {
    return this.current === w;
  }

  /** Whether a worker is running (or starting) for this thread (tests, diagnostics). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** The session is over: the thread stops, and attaches no more. */
  async close(): Promise<void> {
    this.closed = true;
    this.idle.cancel();
    this.quiet.cancel();
    const w = this.worker;
    this.worker = undefined;
    this.current = undefined;
    if (w)
      await w.then(
        (worker) => worker.terminate(),
        () => undefined,
      );
  }
}

/** A worker's collection: its heap in use after it (bytes), and how long it took (ms). */
export interface Collected {
  heapUsed: number;
  ms: number;
}

/** What a settle did: the worker's collection, and the process's release (undefined when an idle release was due). */
export interface Settled extends Collected {
  released: Released | undefined;
}

/** Has `worker` collect its garbage; resolves with what that did, or undefined if it ended first. */
function collectIn(worker: Worker, keepCode: boolean): Promise<Collected | undefined> {
  return new Promise((resolve) => {
    const onMsg = (m: FromWorker): void => {
      if (m.type !== 'collected') return;
      done();
      resolve({ heapUsed: m.heapUsed, ms: m.ms });
    };
    const done = (): void => {
      worker.off('message', onMsg);
      worker.off('exit', onExit);
    };
    const onExit = (): void => {
      done();
      resolve(undefined);
    };
    worker.on('message', onMsg);
    worker.once('exit', onExit);
    send(worker, { type: 'collect', keepCode });
  });
}

const DEFAULT_IDLE_MS = 30_000;
/** A call within this many settle delays of a settle doubles the delay (see the header). */
export const SETTLE_BACKOFF = 4;
const DEFAULT_KEEP_MIB = 4;

/**
 * MURMUR_COMPONENT_IDLE_KEEP_MIB, or the default: the largest linear memory (MiB) an instance of
 * the session's thread may hold and still be kept through an idle period (see the header); 0 lets
 * every instance, and with them the worker, go. Anything but a number of MiB ≥ 0 is refused by name.
 */
export function componentIdleKeepBytes(env: NodeJS.ProcessEnv = process.env): number {
  const mib = envNonNegative(env, 'MURMUR_COMPONENT_IDLE_KEEP_MIB', DEFAULT_KEEP_MIB, {
    code: 'E-RUN-075',
    unit: 'MiB',
    hint: `set the largest linear memory of a component instance kept through an idle period (default ${DEFAULT_KEEP_MIB}), or 0 to let every instance and the thread go`,
  });
  return Math.round(mib * 1048576);
}

/** MURMUR_COMPONENT_IDLE_MS, or the default; anything but a number of ms ≥ 0 is refused by name. */
export function componentIdleMs(env: NodeJS.ProcessEnv = process.env): number {
  return envNonNegative(env, 'MURMUR_COMPONENT_IDLE_MS', DEFAULT_IDLE_MS, {
    code: 'E-RUN-034',
    unit: 'milliseconds',
    hint: `set how long the session's component thread may sit idle before its worker is let go (default ${DEFAULT_IDLE_MS}), or 0 to keep it`,
  });
}

export const DEFAULT_SPIN_US = 50;
export const MAX_SPIN_US = 10_000;

/**
 * MURMUR_COMPONENT_SPIN_US, or the default: how long a component's worker polls for the next call
 * after answering one, and the main thread for a short call's answer, before either sleeps
 * (host/doorbell.ts says why and when); anything but a number of µs from 0 to 10 000 is refused by name.
 *
 * The default is 50 µs where the process may run on two CPUs or more, and 0 where it may run on
 * one (`cpus`: os.availableParallelism(), which follows the CPU affinity a container's cpuset
 * gives): on one CPU the thread that polls holds the CPU the other needs to answer, so polling
 * can only delay the hand-off. A value set in the environment is used as given.
 */
export function componentSpinUs(env: NodeJS.ProcessEnv = process.env, cpus: number = availableParallelism()): number {
  return envNonNegative(env, 'MURMUR_COMPONENT_SPIN_US', cpus > 1 ? DEFAULT_SPIN_US : 0, {
    code: 'E-RUN-036',
    unit: 'microseconds',
    max: MAX_SPIN_US,
    hint: `set how long the component threads poll for each other's next message before they sleep (default ${DEFAULT_SPIN_US}), or 0 to let them sleep at once`,
  });
}

/**
 * MURMUR_COMPONENT_THREADS: `session` (the default: a session's driver and tools share one worker
 * thread) or `instance` (a thread each, as hooks always have); anything else is refused by name.
 */
export function componentThreads(env: NodeJS.ProcessEnv = process.env): 'session' | 'instance' {
  const v = env.MURMUR_COMPONENT_THREADS;
  if (v === undefined || v === '' || v === 'session') return 'session';
  if (v === 'instance') return 'instance';
  throw new MurError('E-RUN-033', `MURMUR_COMPONENT_THREADS must be session or instance, not ${JSON.stringify(v)}`, {
    hint: "session (the default): a session's driver and tools share one worker thread; instance: a thread each",
  });
}
