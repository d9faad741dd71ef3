/**
 * The task machine's writes to its store (tasks.ts): queued per task, never blocking the task, and
 * joined while queued. Each write is the whole task as it is when the write starts, so a save
 * asked for while another of the same task is still queued joins it: changes made together are one
 * upsert of the newest state (`rec.saving` settles once it is stored), and the last state a task
 * reached is written no later than before.
 */
import type { TaskStore } from '@a2a-js/sdk/server';
import { errMessage } from './executor-events.ts';
import { snapshot, type TaskRecord } from './task-record.ts';

export class TaskSaves {
  private readonly saves = new Set<Promise<void>>();
  /** Records with a write queued that has not started yet (save() joins it). */
  private readonly queued = new WeakSet<TaskRecord>();

  constructor(
    private readonly store: TaskStore,
    /** A save failed (the task goes on in memory). Default: one line on stderr (E-A2A-014). */
    private readonly onError?: (taskId: string, e: unknown) => void,
  ) {}

  /** Queue a write of `rec` (none for a record this process has left to another: rec.detached). */
  save(rec: TaskRecord): void {
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

  /** Waits until every save issued so far has reached the store. */
  async flush(): Promise<void> {
    while (this.saves.size > 0) await Promise.all([...this.saves]);
  }
}
