/**
 * Whether a serving capsule is doing anything, and since when it is not: the signal the operator
 * puts a sleep-enabled Capsule to sleep by (`capsule_idle_seconds`, docs/observability.md).
 *
 * Pure counting: every piece of work that keeps the capsule awake calls `begin()` where it starts
 * and the returned `end()` where it ends (a task in the task machine, an A2A request in the HTTP
 * routes, a gRPC call). The capsule is busy while any has begun and not ended; its idle period
 * starts when the last one ends (or when the tracker is made, for a process that has done nothing
 * yet). The clock is injected so the rule is tested without waiting.
 */

/** What a place that does work needs: mark its start; the returned function marks its end. */
export interface Activity {
  begin(): () => void;
}

export class ActivityTracker implements Activity {
  #open = 0;
  #begun = 0;
  #idleSinceMs: number;

  /** `now`: the wall clock in milliseconds since the epoch (Date.now; a fake one in tests). */
  constructor(private readonly now: () => number = Date.now) {
    this.#idleSinceMs = now();
  }

  /** One piece of work begins; the returned end is idempotent (a second call does nothing). */
  begin(): () => void {
    this.#open++;
    this.#begun++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#open--;
      if (this.#open === 0) this.#idleSinceMs = this.now();
    };
  }

  /** Pieces of work begun and not ended. */
  get open(): number {
    return this.#open;
  }

  /** Pieces of work begun since the tracker was made, ended or not (0: nothing has called the capsule yet). */
  get begun(): number {
    return this.#begun;
  }

  /** Seconds since the capsule last did anything; 0 while busy. */
  idleSeconds(): number {
    return this.#open > 0 ? 0 : Math.max(0, this.now() - this.#idleSinceMs) / 1000;
  }

  /** Unix time (seconds) the current idle period began; 0 while busy. */
  idleSinceSeconds(): number {
    return this.#open > 0 ? 0 : this.#idleSinceMs / 1000;
  }
}
