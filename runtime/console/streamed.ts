/**
 * The steps of the tasks this console sent, as their streams carried them. A capsule streams a
 * task's trace records (`step` artifacts: turns with model and tokens, calls, hook decisions) but
 * does not keep them on the task, so GetTask cannot give them back later: the console keeps what
 * it saw, for the timeline of those tasks, in memory for this run and for the newest tasks only.
 */
import type { TimelineEntry } from './timeline.ts';

/** Tasks whose steps are kept; the oldest is forgotten first. */
export const KEPT_TASKS = 100;
/** Steps kept of one task; a longer task keeps its first ones and says how many were left out. */
export const KEPT_STEPS = 2000;

export class StreamedSteps {
  private readonly tasks = new Map<string, { entries: TimelineEntry[]; dropped: number }>();

  /** `key` names the agent and the task (an id is unique only on its capsule). */
  add(key: string, e: TimelineEntry): void {
    let t = this.tasks.get(key);
    if (!t) {
      t = { entries: [], dropped: 0 };
      this.tasks.set(key, t);
      if (this.tasks.size > KEPT_TASKS) this.tasks.delete(this.tasks.keys().next().value!);
    }
    if (t.entries.length < KEPT_STEPS) t.entries.push(e);
    else t.dropped++;
  }

  get(key: string): { entries: TimelineEntry[]; dropped: number } | undefined {
    return this.tasks.get(key);
  }
}
