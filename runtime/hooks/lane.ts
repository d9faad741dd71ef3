/**
 * An async hook's lane (hooks.md "Execution mode"): one instance, events run one at a time in
 * dispatch order, at most `depth` waiting. What a full lane does with a new event is the hook's
 * `on_overflow` rule: `drop` discards it (a `queue-overflow` fault), `block` makes the dispatch wait
 * for room. The rule is the pure `admission`; the lane only keeps the queue.
 */
import type { Handler } from '../contracts/commit-table.ts';

export interface Job {
  handler: Handler;
  event: unknown;
}

export type OverflowRule = 'drop' | 'block';

/**
 * What a dispatch to a lane holding `queued` events (`depth` at most, `waiting` dispatches already
 * blocked for room) does: join the queue, be dropped, or wait for room. A dispatch never overtakes
 * one already waiting, so dispatch order is kept.
 */
export function admission(queued: number, depth: number, waiting: number, rule: OverflowRule): 'queue' | 'drop' | 'wait' {
  if (queued < depth && waiting === 0) return 'queue';
  return rule === 'drop' ? 'drop' : 'wait';
}

export interface LaneOptions {
  depth: number;
  onOverflow: OverflowRule;
  /** Runs one event (the hook call and its fault reporting); never rejects. */
  run: (job: Job) => Promise<void>;
  /** A full lane dropped `job` (the `drop` rule). */
  overflowed: (job: Job) => void;
}

export class AsyncLane {
  private readonly q: Job[] = [];
  private running = false;
  private idleWaiters: (() => void)[] = [];
  private roomWaiters: (() => void)[] = [];
  dropped = 0;
  aborted = false;

  constructor(private readonly o: LaneOptions) {}

  get pending(): number {
    return this.q.length + (this.running ? 1 : 0);
  }

  /** Queues `job`; returns a promise only when the dispatch must wait for room (`block`). */
  enqueue(job: Job): Promise<void> | undefined {
    if (this.aborted) {
      this.dropped++;
      return undefined;
    }
    switch (admission(this.q.length, this.o.depth, this.roomWaiters.length, this.o.onOverflow)) {
      case 'queue':
        this.push(job);
        return undefined;
      case 'drop':
        this.dropped++;
        this.o.overflowed(job);
        return undefined;
      case 'wait':
        return new Promise<void>((resolve) => this.roomWaiters.push(resolve)).then(() => {
          this.push(job);
        });
    }
  }

  private push(job: Job): void {
    if (this.aborted) {
      this.dropped++;
      return;
    }
    this.q.push(job);
    if (!this.running) {
      this.running = true;
      void this.pump();
    }
  }

  private async pump(): Promise<void> {
    while (this.q.length > 0 && !this.aborted) {
      const job = this.q.shift()!;
      // Room opened: admit the oldest blocked dispatch (keeps dispatch order).
      const wake = this.roomWaiters.shift();
      if (wake) wake();
      await this.o.run(job);
    }
    this.running = false;
    if (this.q.length > 0 && !this.aborted) {
      this.running = true;
      void this.pump();
      return;
    }
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }

  whenIdle(): Promise<void> {
    if (!this.running && this.q.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops the lane: queued events are abandoned, blocked dispatches released. Returns how many were abandoned. */
  abort(): number {
    this.aborted = true;
    const n = this.q.length + (this.running ? 1 : 0);
    this.q.length = 0;
    for (const w of this.roomWaiters.splice(0)) w();
    this.running = false;
    for (const f of this.idleWaiters.splice(0)) f();
    return n;
  }
}
