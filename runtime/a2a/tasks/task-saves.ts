/**
 * The task machine's writes to its store (tasks.ts): queued per task, never blocking the task, and
 * joined while queued. Each write is the whole task as it is when the write starts, so a save
 * asked for while another of the same task is still queued joins it: changes made together are one
 * upsert of the newest state (`rec.saving` settles once it is stored), and the last state a task
 * reached is written no later than before.
 *
 * A `working` state, and an artifact of a running task, may be written later (`later`, with a
 * delay): within the delay unless a save of the task comes first and writes it along (the final
 * state of a short task does), and at once by flush(). On `mur serve`'s SQLite store a one-turn
 * task's two `working` writes (started, then the inference turn's note) were half its four, and
 * each tool call's `tool-call` artifact was one more whole-task write (≈ 0.1 ms of the main thread
 * each, more as the task's row grows: docs/measurements/reference.md, session 29); with one
 * process per file nobody reads them meanwhile: `tasks/get` answers a running task from memory,
 * ListTasks flushes first, and after a kill -9 the unfinished task is failed at restart whichever
 * `working` state and artifacts it was stored with (issue 42).
 */
import type { TaskStore } from '@a2a-js/sdk/server';
import { errMessage } from '../../errors.ts';
import { snapshot, type TaskRecord } from './task-record.ts';

export class TaskSaves {
  private readonly saves = new Set<Promise<void>>();
  /** Records with a write queued that has not started yet (save() joins it). */
  private readonly queued = new WeakSet<TaskRecord>();

  /** Records whose newest state waits for its delayed write (`later`), with the timer of that write. */
  private readonly delayed = new Map<TaskRecord, NodeJS.Timeout>();

  constructor(
    private readonly store: TaskStore,
    /** A save failed (the task goes on in memory). Default: one line on stderr (E-A2A-014). */
    private readonly onError?: (taskId: string, e: unknown) => void,
    /** How long `later` may hold a write; 0 = it writes at once, as `save`. */
    private readonly delayMs = 0,
  ) {}

  /**
   * Write `rec` within the delay (a `working` state, an artifact): joined by any save of it before
   * then (which writes its newest state), or by a queued one now; flush() writes it at once.
   */
  later(rec: TaskRecord): void {
    if (this.delayMs <= 0) {
      this.save(rec);
      return;
    }
    if (this.queued.has(rec) || this.delayed.has(rec) || rec.detached) return;
    const timer = setTimeout(() => this.save(rec), this.delayMs);
    // A pending write holds no process open: close() and drain() flush, which writes it.
    timer.unref();
    this.delayed.set(rec, timer);
  }

  /** Queue a write of `rec` (none for a record this process has left to another: rec.detached). */
  save(rec: TaskRecord): void {
    const timer = this.delayed.get(rec);
    if (timer) {
      clearTimeout(timer);
      this.delayed.delete(rec);
    }
    if (this.queued.has(rec) || rec.detached) return;
    this.queued.add(rec);
    const p = rec.saving
      .then(() => {
        this.queued.delete(rec);
        return this.store.save(snapshot(rec), rec.ownerContext);
      })
      .catch((e: unknown) => {
        if (this.onError) this.onError(rec.id, e);
        else process.stderr.write(`mur: E-A2A-014 task store: saving task ${rec.id} failed: ${errMessage(e)}\n`);
      });
    rec.saving = p;
    this.saves.add(p);
    void p.finally(() => this.saves.delete(p));
  }

  /** Writes every delayed state now and waits until every save issued so far has reached the store. */
  async flush(): Promise<void> {
    for (const rec of [...this.delayed.keys()]) this.save(rec);
    while (this.saves.size > 0) await Promise.all([...this.saves]);
  }
}
