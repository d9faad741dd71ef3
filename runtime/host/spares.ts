/**
 * Pre-instantiated spares. Instantiating a component costs tens of milliseconds even in a booted
 * worker (SpiderMonkey's own instantiate is most of it), so once a component has been started twice
 * in this process — evidence it recurs: a script capsule's fresh instance per A2A task, a restart
 * after a fault or a cancel, a session per run in a long-lived host — the host keeps
 * one instance of it ready, instantiated with no grants at all. The next instance of that
 * component takes the spare and binds its own grants before its first call (runtime/host/wasi.ts,
 * lateBoundWasi), which costs a message instead of an instantiation.
 *
 * A spare whose instantiation read a grant (its environment, a preopen, stdout, the network) would
 * have seen the empty grants, and one that called a host import fails (nothing answers it yet):
 * either way it is discarded and that component is never spared again — it instantiates with its
 * grants, as before.
 *
 * Bounded: at most MURMUR_SPARE_INSTANCES spares (default 4, fewer under a pod memory limit:
 * memory-budget.ts; 0 turns spares off), the least
 * recently replenished dropped first. An idle spare costs a worker thread (≈ 24 MB RSS for a
 * SpiderMonkey component) and does not keep the process alive.
 */
import { EventEmitter } from 'node:events';
import { defaultSpareCount } from './memory-budget.ts';
import type { Launched } from './workers.ts';

/** A spare on its way: scheduled (timer set) until start() runs, then instantiating (done). */
interface Making {
  timer: NodeJS.Timeout | undefined;
  done: Promise<void> | undefined;
  start(): Promise<void>;
}

/** How a spare on its way ended: ready, refused (read a grant or failed), or none (dropped unmade). */
export type SpareOutcome = 'ready' | 'refused' | 'none';

/**
 * Emits `'making'` (key) when a spare starts instantiating and `'settled'` (key, SpareOutcome) when
 * no spare of that key is on its way any more: diagnostics, and tests wait on these, never on timers.
 */
export class SparePool extends EventEmitter {
  private readonly ready = new Map<string, Launched>();
  /** Spares scheduled (timer) or instantiating (done), per key. */
  private readonly making = new Map<string, Making>();
  private readonly starts = new Map<string, number>();
  /** Components whose instantiation reads a grant, or fails without grants: never spared. */
  private readonly refused = new Set<string>();

  constructor(public max: number) {
    super();
  }

  /** Resolves once no spare of this key is scheduled or instantiating, with how it stands then. */
  whenSettled(key: string): Promise<SpareOutcome> {
    if (!this.making.has(key)) return Promise.resolve(this.outcome(key));
    return new Promise((resolve) => {
      const on = (k: string, o: SpareOutcome) => {
        if (k !== key) return;
        this.off('settled', on);
        resolve(o);
      };
      this.on('settled', on);
    });
  }

  /** Resolves once no spare of any key is scheduled or instantiating. */
  async whenIdle(): Promise<void> {
    while (this.making.size) await Promise.all(this.makingKeys().map((k) => this.whenSettled(k)));
  }

  /** Keys with a spare scheduled or instantiating (tests, diagnostics). */
  makingKeys(): string[] {
    return [...this.making.keys()];
  }

  private outcome(key: string): SpareOutcome {
    return this.ready.has(key) ? 'ready' : this.refused.has(key) ? 'refused' : 'none';
  }

  private settle(key: string): void {
    this.emit('settled', key, this.outcome(key));
  }

  /**
   * A ready spare for this key, removed from the pool; none when there is none. A spare on its way
   * is waited for, and one merely scheduled starts now: either way it is no slower than
   * instantiating afresh, and two instantiations side by side would only compete for the CPU.
   */
  async take(key: string): Promise<Launched | undefined> {
    const m = this.making.get(key);
    if (m && !this.ready.has(key)) await m.start();
    const spare = this.ready.get(key);
    if (!spare) return undefined;
    this.ready.delete(key);
    spare.worker.ref();
    return spare;
  }

  /**
   * Records an instance start for this key, and (from the second on) makes a spare for the next
   * one: at once when this start took a spare, otherwise a moment later, so it does not compete
   * for the CPU with the instantiation that just happened (these machines have 2 cores).
   */
  started(key: string, make: () => Promise<Launched>, tookSpare = false): void {
    const n = (this.starts.get(key) ?? 0) + 1;
    this.starts.set(key, n);
    if (this.max <= 0 || n < 2 || this.refused.has(key) || this.ready.has(key) || this.making.has(key)) return;
    const entry: Making = {
      timer: undefined,
      done: undefined,
      start: () => {
        clearTimeout(entry.timer);
        entry.timer = undefined;
        if (!entry.done) this.emit('making', key);
        entry.done ??= this.make(key, make).finally(() => {
          this.making.delete(key);
          this.settle(key);
        });
        return entry.done;
      },
    };
    this.making.set(key, entry);
    entry.timer = setTimeout(() => void entry.start(), tookSpare ? 0 : 300);
    entry.timer.unref();
  }

  private async make(key: string, make: () => Promise<Launched>): Promise<void> {
    try {
      const spare = await make();
      const early = await spare.ready;
      if (early.length) {
        this.refused.add(key);
        await spare.worker.terminate();
        return;
      }
      spare.worker.unref();
      spare.worker.once('exit', () => {
        if (this.ready.get(key) === spare) this.ready.delete(key);
      });
      this.ready.set(key, spare);
      while (this.ready.size > this.max) {
        const [oldKey, old] = this.ready.entries().next().value as [string, Launched];
        this.ready.delete(oldKey);
        void old.worker.terminate();
      }
    } catch {
      // It failed without grants (a host import called while instantiating, say): it would fail
      // again, and an instance waiting for it would pay twice. That component is not spared.
      this.refused.add(key);
    }
  }

  /** Keys with a spare ready, oldest first (tests, diagnostics). */
  readyKeys(): string[] {
    return [...this.ready.keys()];
  }

  /** Whether this key is known to read grants while instantiating (tests, diagnostics). */
  isRefused(key: string): boolean {
    return this.refused.has(key);
  }

  async drain(): Promise<void> {
    for (const [key, m] of this.making) {
      if (m.timer) {
        clearTimeout(m.timer);
        this.making.delete(key);
        this.settle(key);
      }
    }
    const all = [...this.ready.values()];
    this.ready.clear();
    await Promise.all(all.map((s) => s.worker.terminate()));
  }
}

export const SPARES = new SparePool(defaultSpareCount());
