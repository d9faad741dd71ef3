/**
 * An async hook's lane (runtime/hooks/lane.ts): the overflow rule as a table, and the queue's order
 * and waiting driven by the lane's own promises (each run resolves when the test releases it; no
 * timers, no component).
 */
import { describe, expect, it } from 'vitest';
import { AsyncLane, admission, type Job } from '../../runtime/hooks/lane.ts';

describe('admission: the overflow rule', () => {
  const rows: [queued: number, depth: number, waiting: number, rule: 'drop' | 'block', expected: 'queue' | 'drop' | 'wait'][] = [
    [0, 2, 0, 'drop', 'queue'],
    [1, 2, 0, 'drop', 'queue'],
    [2, 2, 0, 'drop', 'drop'],
    [2, 2, 0, 'block', 'wait'],
    [1, 2, 1, 'block', 'wait'], // room, but an earlier dispatch waits: no overtaking
    [1, 2, 1, 'drop', 'drop'],
    [0, 0, 0, 'block', 'wait'],
  ];
  for (const [queued, depth, waiting, rule, expected] of rows) {
    it(`${queued} queued of ${depth}, ${waiting} waiting, on_overflow ${rule} → ${expected}`, () => {
      expect(admission(queued, depth, waiting, rule)).toBe(expected);
    });
  }
});

/** A lane whose runs finish only when released, recording what ran and what overflowed. */
function gatedLane(depth: number, onOverflow: 'drop' | 'block') {
  const ran: string[] = [];
  const overflowed: string[] = [];
  const gates: (() => void)[] = [];
  let started: (() => void) | undefined;
  const lane = new AsyncLane({
    depth,
    onOverflow,
    run: (job) => {
      ran.push(String(job.event));
      started?.();
      return new Promise<void>((resolve) => gates.push(resolve));
    },
    overflowed: (job) => overflowed.push(String(job.event)),
  });
  const job = (event: string): Job => ({ handler: 'on-inference', event });
  /** Resolves once the lane has started its next run. */
  const nextStart = () => new Promise<void>((resolve) => (started = resolve));
  const release = () => gates.shift()!();
  return { lane, job, ran, overflowed, release, nextStart };
}

describe('AsyncLane', () => {
  it('runs events one at a time in dispatch order; drop discards what does not fit', async () => {
    const t = gatedLane(2, 'drop');
    const first = t.nextStart();
    t.lane.enqueue(t.job('a')); // running
    await first;
    t.lane.enqueue(t.job('b'));
    t.lane.enqueue(t.job('c')); // queue holds 2
    expect(t.lane.enqueue(t.job('d'))).toBeUndefined(); // full: dropped at once
    expect(t.overflowed).toEqual(['d']);
    expect(t.lane.dropped).toBe(1);
    expect(t.lane.pending).toBe(3);
    for (const next of ['b', 'c']) {
      const s = t.nextStart();
      t.release();
      await s;
      expect(t.ran.at(-1)).toBe(next);
    }
    const idle = t.lane.whenIdle();
    t.release();
    await idle;
    expect(t.ran).toEqual(['a', 'b', 'c']);
    expect(t.lane.pending).toBe(0);
  });

  it('block makes the dispatch wait for room, and keeps its place in order', async () => {
    const t = gatedLane(1, 'block');
    const first = t.nextStart();
    t.lane.enqueue(t.job('a'));
    await first;
    expect(t.lane.enqueue(t.job('b'))).toBeUndefined(); // the one free slot
    let admitted = false;
    const waiting = t.lane.enqueue(t.job('c'))!.then(() => (admitted = true));
    expect(waiting).toBeInstanceOf(Promise);
    const s = t.nextStart();
    t.release(); // a done: b starts, room opens for c
    await s;
    await waiting;
    expect(admitted).toBe(true);
    expect(t.overflowed).toEqual([]);
    const idle = t.lane.whenIdle();
    const s2 = t.nextStart();
    t.release();
    await s2;
    t.release();
    await idle;
    expect(t.ran).toEqual(['a', 'b', 'c']);
  });

  it('abort abandons the queue and releases a waiting dispatch', async () => {
    const t = gatedLane(1, 'block');
    const first = t.nextStart();
    t.lane.enqueue(t.job('a'));
    await first;
    t.lane.enqueue(t.job('b'));
    const waiting = t.lane.enqueue(t.job('c'))!;
    expect(t.lane.abort()).toBe(2); // a running + b queued
    await waiting; // released, and c is not queued
    await t.lane.whenIdle();
    expect(t.lane.aborted).toBe(true);
    expect(t.ran).toEqual(['a']);
    expect(t.lane.dropped).toBe(1); // c, admitted after the abort
  });
});
