/**
 * Interleaved arms (bench/warmup.ts `--interleave B`): every arm's serving process alive at once,
 * each window's tasks sent in batches of B that take turns between the arms. Why: this machine's
 * speed moves by up to ×2 from one second to the next — a fixed JavaScript workload in the bench
 * process took 288–570 ms between consecutive 100-task windows, and one process's consecutive
 * windows 1.9–5.1 ms a task with nothing changed in it (docs/measurements/reference.md, session
 * 35) — and an arm's window of a few hundred milliseconds, a round apart from the other arm's,
 * catches whichever speed the machine has then: a "slow round" of a whole arm. Batches a few tens
 * of milliseconds apart see the same machine. The cost: every batch starts and drains its senders
 * again (idle ones at the end of a batch), which both arms pay alike.
 *
 * Pure: the schedule and the trace figures of batched windows, table-tested in test/bench/.
 */
import type { TaskEvents } from './trace-phases.ts';
import { endToStart, phaseMeans } from './trace-phases.ts';

/** One batch: arm `arm` (index) runs tasks `from` .. `from + n − 1` (the task numbers its client sends), for window `window`. */
export interface Batch {
  arm: number;
  window: number;
  from: number;
  n: number;
}

/**
 * The batches of one round: window by window, the window's `tasks` (task numbers from `first + w ×
 * tasks`) in batches of `size` (the last one shorter when `size` does not divide `tasks`), each
 * batch of every arm in turn. The arms' order reverses every batch, and the first batch's order
 * every other round, so no arm always goes first or follows the same arm.
 */
export function schedule(arms: number, windows: number, tasks: number, size: number, round: number, first = 1): Batch[] {
  if (!Number.isInteger(size) || size < 1) throw new Error(`batch size must be a whole number ≥ 1, got ${size}`);
  const out: Batch[] = [];
  let k = round % 2;
  for (let window = 0; window < windows; window++) {
    for (let done = 0; done < tasks; done += size, k++) {
      const n = Math.min(size, tasks - done);
      const order = Array.from({ length: arms }, (_, i) => i);
      if (k % 2) order.reverse();
      for (const arm of order) out.push({ arm, window, from: first + window * tasks + done, n });
    }
  }
  return out;
}

/**
 * The spacing of task ends within batches: Σ (last end − first end) / Σ (n − 1) over the batches,
 * `ends[i]` being task i's end (ms). With one batch a window, the window's (last − first) / (n − 1).
 * NaN when a batch's tasks are missing from `ends` (a trace with too few events).
 */
export function batchSpacing(ends: readonly number[], batches: readonly Pick<Batch, 'from' | 'n'>[]): number {
  let span = 0;
  let gaps = 0;
  for (const b of batches) {
    const a = ends[b.from];
    const z = ends[b.from + b.n - 1];
    if (a === undefined || z === undefined) return NaN;
    span += z - a;
    gaps += b.n - 1;
  }
  return gaps ? span / gaps : NaN;
}

/**
 * The phases of a window's tasks (trace-phases.ts `phaseMeans`), batched: the phases inside a task
 * over all of them, and the gap from a task's end to the next one's start only within a batch (the
 * gap between batches is the other arms' time). `tasks[i]` is task i.
 */
export function batchPhases(tasks: readonly TaskEvents[], batches: readonly Pick<Batch, 'from' | 'n'>[]): Map<string, number> {
  const own = batches.map((b) => tasks.slice(b.from, b.from + b.n));
  const out = phaseMeans(own.flat());
  out.delete('task_end → task_start');
  const count = own.reduce((n, b) => n + Math.max(0, b.length - 1), 0);
  if (count) out.set('task_end → task_start', own.reduce((sum, b) => sum + endToStart(b), 0) / count);
  return out;
}
