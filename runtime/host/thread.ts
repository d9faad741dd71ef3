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
 */
import type { Worker } from 'node:worker_threads';
import { MurError } from '../errors.ts';
import type { Grants, ImportSpec } from './protocol.ts';
import type { LoadedComponent } from './transpile-cache.ts';
import { POOL, instantiateIn, type Launched } from './workers.ts';

export class ComponentThread {
  private worker: Promise<Worker> | undefined;
  /** The worker once started (undefined from the moment it is stopped). */
  private current: Worker | undefined;
  private nextSlot = 1;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Workers started for this thread (1 + restarts after a deadline stopped one). */
  starts = 0;

  /**
   * Runs `fn` once everything queued before it has finished: one guest runs in the thread at a
   * time, so a call's deadline does not count another instance's time.
   */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Instantiates a component in a new slot (in the thread's worker, started if there is none). */
  async attach(c: LoadedComponent, modules: Record<string, WebAssembly.Module>, importSpec: ImportSpec, grants: Grants, deadlineMs: number): Promise<Launched> {
    if (this.closed) throw new Error('the component thread is closed');
    let first = false;
    if (!this.worker) {
      first = true;
      this.starts++;
      const w = POOL.take();
      this.worker = w;
      w.then((worker) => {
        // Each instance in the thread listens to its worker (its exit, its slot's messages) while
        // its slot lives: as many listeners as instances, which may pass Node's warning level of 10.
        worker.setMaxListeners(0);
        worker.once('exit', () => {
          if (this.worker === w) this.worker = undefined;
          if (this.current === worker) this.current = undefined;
        });
      }, () => {
        if (this.worker === w) this.worker = undefined;
      });
    }
    const worker = await this.worker;
    this.current = worker;
    return instantiateIn(worker, this.nextSlot++, c, modules, importSpec, grants, deadlineMs, { withNet: first, ownWorker: false });
  }

  /** Drops an instance's slot: the thread lets go of everything it held. */
  detach(l: Launched): void {
    l.release();
    try {
      l.worker.postMessage({ type: 'drop', slot: l.slot });
    } catch { /* the worker is gone already */ }
  }

  /** Stops the thread (a deadline passed in it): every instance in it starts afresh on its next call. */
  kill(): void {
    const w = this.worker;
    this.worker = undefined;
    this.current = undefined;
    void w?.then((worker) => worker.terminate(), () => undefined);
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
    const w = this.worker;
    this.worker = undefined;
    this.current = undefined;
    if (w) await w.then((worker) => worker.terminate(), () => undefined);
  }
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
