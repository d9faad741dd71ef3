/**
 * bench/interleave.ts: the batch schedule of interleaved arms, and the trace figures of windows
 * sent in batches (warmup.ts --interleave).
 */
import { describe, expect, it } from 'vitest';
import { batchPhases, batchSpacing, schedule } from '../../bench/interleave.ts';
import type { TaskEvents } from '../../bench/trace-phases.ts';

describe('interleaved schedule', () => {
  it('sends every task of every window of every arm exactly once, in batches of the size asked', () => {
    const b = schedule(2, 3, 100, 20, 0);
    for (const arm of [0, 1]) {
      const mine = b.filter((x) => x.arm === arm);
      const tasks = mine.flatMap((x) => Array.from({ length: x.n }, (_, i) => x.from + i));
      expect(tasks).toEqual(Array.from({ length: 300 }, (_, i) => 1 + i));
      expect(mine.every((x) => x.n === 20 && x.window === Math.floor((x.from - 1) / 100))).toBe(true);
    }
  });

  it('takes turns batch by batch, the order reversing every batch and every other round', () => {
    const arms = (round: number) =>
      schedule(2, 1, 60, 20, round)
        .map((x) => x.arm)
        .join('');
    expect(arms(0)).toBe('011001');
    expect(arms(1)).toBe('100110');
    expect(schedule(3, 1, 20, 10, 0).map((x) => x.arm)).toEqual([0, 1, 2, 2, 1, 0]);
  });

  it('ends a window with a shorter batch when the size does not divide it, and one batch a window is the window whole', () => {
    expect(schedule(1, 1, 50, 20, 0).map((x) => [x.from, x.n])).toEqual([
      [1, 20],
      [21, 20],
      [41, 10],
    ]);
    expect(schedule(1, 2, 100, 100, 0).map((x) => [x.window, x.from, x.n])).toEqual([
      [0, 1, 100],
      [1, 101, 100],
    ]);
  });

  it('refuses a batch size that is not a whole number of 1 or more, naming it', () => {
    expect(() => schedule(2, 1, 100, 0, 0)).toThrow('batch size must be a whole number ≥ 1, got 0');
    expect(() => schedule(2, 1, 100, 2.5, 0)).toThrow('got 2.5');
  });
});

describe('batched trace figures', () => {
  // Task i ends at 10·i within a batch; the second batch starts 1000 ms later (the other arm ran).
  const ends = [0, 10, 20, 30, 1040, 1050, 1060];
  it('spaces task ends within batches, not across the other arms’ time between them', () => {
    expect(
      batchSpacing(ends, [
        { from: 1, n: 3 },
        { from: 4, n: 3 },
      ]),
    ).toBe(10);
    expect(batchSpacing(ends, [{ from: 1, n: 6 }])).toBe((1060 - 10) / 5);
    expect(batchSpacing(ends, [{ from: 5, n: 3 }])).toBeNaN();
  });

  it('keeps the phases inside tasks and counts the gap between tasks within a batch only', () => {
    const task = (start: number, kinds = ['task_start', 'inference', 'task_end']): TaskEvents => ({ kinds, stamps: [start, start + 3, start + 4] });
    const tasks = [task(-10), task(0), task(10), task(1000), task(1010)];
    const p = batchPhases(tasks, [
      { from: 1, n: 2 },
      { from: 3, n: 2 },
    ]);
    expect(p.get('task_start → inference')).toBe(3);
    expect(p.get('inference → task_end')).toBe(1);
    expect(p.get('task_end → task_start')).toBe(6);
  });
});
