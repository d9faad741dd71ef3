/**
 * Pre-instantiated spares. Instantiating a component costs tens of milliseconds even in a booted
 * worker (SpiderMonkey's own instantiate is most of it), so once a component has been started twice
 * in this process — evidence it recurs: a session per A2A task, a hook per session — the host keeps
 * one instance of it ready, instantiated with no grants at all. The next instance of that
 * component takes the spare and binds its own grants before its first call (runtime/host/wasi.ts,
 * lateBoundWasi), which costs a message instead of an instantiation.
 *
 * A spare whose instantiation read a grant (its environment, a preopen, stdout, the network, or a
 * host import) would have seen the empty grants, so it is discarded and that component is never
 * spared again: it instantiates with its grants, as before.
 *
 * Bounded: at most MURMUR_SPARE_INSTANCES spares (default 4; 0 turns spares off), the least
 * recently replenished dropped first. An idle spare costs a worker thread (≈ 24 MB RSS for a
 * SpiderMonkey component) and does not keep the process alive.
 */
import type { Launched } from './workers.ts';

export class SparePool {
  private readonly ready = new Map<string, Launched>();
  private readonly making = new Set<string>();
  private readonly starts = new Map<string, number>();
  /** Components whose instantiation reads a grant: never spared. */
  private readonly refused = new Set<string>();

  constructor(public max: number) {}

  /** A ready spare for this key, removed from the pool; none when there is none ready. */
  take(key: string): Launched | undefined {
    const spare = this.ready.get(key);
    if (!spare) return undefined;
    this.ready.delete(key);
    spare.worker.ref();
    return spare;
  }

  /**
   * Records an instance start for this key, and (from the second on) makes a spare for the next
   * one, a moment later so it does not compete with the instance just started for the CPU.
   */
  started(key: string, make: () => Promise<Launched>): void {
    const n = (this.starts.get(key) ?? 0) + 1;
    this.starts.set(key, n);
    if (this.max <= 0 || n < 2 || this.refused.has(key) || this.ready.has(key) || this.making.has(key)) return;
    this.making.add(key);
    setTimeout(() => void this.make(key, make), 300).unref();
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
      // A failed spare costs nothing: the next instance instantiates as if there were none.
    } finally {
      this.making.delete(key);
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
    const all = [...this.ready.values()];
    this.ready.clear();
    await Promise.all(all.map((s) => s.worker.terminate()));
  }
}

export const SPARES = new SparePool(Number(process.env.MURMUR_SPARE_INSTANCES ?? 4));
