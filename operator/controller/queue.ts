/**
 * A keyed work queue (the client-go shape): a key is queued at most once; a key being processed
 * is not handed to a second worker, and if it is added meanwhile it runs again afterwards; failed
 * keys come back after an exponential, per-key backoff; shutdown drains in-flight work.
 */
export interface QueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class WorkQueue {
  private queue: string[] = [];
  private queued = new Set<string>();
  private processing = new Set<string>();
  private dirty = new Set<string>();
  private failures = new Map<string, number>();
  private timers = new Map<string, NodeJS.Timeout>();
  private waiters: Array<() => void> = [];
  private closed = false;
  private readonly base: number;
  private readonly max: number;
  /** How many adds were merged into an already queued or running key. */
  merged = 0;

  constructor(o: QueueOptions = {}) {
    this.base = o.baseDelayMs ?? 100;
    this.max = o.maxDelayMs ?? 60_000;
  }

  get length(): number {
    return this.queue.length;
  }

  get busy(): number {
    return this.processing.size;
  }

  add(key: string): void {
    if (this.closed) return;
    if (this.processing.has(key)) {
      if (this.dirty.has(key)) this.merged++;
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) {
      this.merged++;
      return;
    }
    this.queued.add(key);
    this.queue.push(key);
    this.waiters.shift()?.();
  }

  addAfter(key: string, ms: number): void {
    if (this.closed) return;
    if (this.timers.has(key)) return;
    const t = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    t.unref();
    this.timers.set(key, t);
  }

  /** Requeue after this key's next backoff step; returns the delay. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.base * 2 ** n, this.max);
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  private async next(): Promise<string | undefined> {
    while (!this.queue.length) {
      if (this.closed) return undefined;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    const key = this.queue.shift()!;
    this.queued.delete(key);
    this.processing.add(key);
    return key;
  }

  private done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  /** Runs `workers` loops until shutdown; each key is handled by one worker at a time. */
  run(workers: number, handle: (key: string) => Promise<void>): Promise<void> {
    const loop = async () => {
      for (;;) {
        const key = await this.next();
        if (key === undefined) return;
        try {
          await handle(key);
        } finally {
          this.done(key);
        }
      }
    };
    return Promise.all(Array.from({ length: workers }, loop)).then(() => undefined);
  }

  /** Stop handing out keys; workers finish what they hold. */
  shutdown(): void {
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.queue = [];
    this.queued.clear();
    this.dirty.clear();
    for (const w of this.waiters.splice(0)) w();
  }
}
