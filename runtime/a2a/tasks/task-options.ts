/**
 * What a task machine (tasks.ts) is configured with, from `lifecycle.*` of the manifest and the
 * `mur serve` flags, and the check that refuses a configuration it cannot run.
 */
import type { StreamResponse } from '@a2a-js/sdk';
import type { TaskStore } from '@a2a-js/sdk/server';
import { MurError } from '../../errors.ts';
import type { TaskExecutor } from '../core/executor.ts';
import type { Activity } from '../../telemetry/activity.ts';
import type { ResumeStore } from '../store/resume-points.ts';
import type { SubscriberBounds } from './stream.ts';
import type { TaskRecord } from './task-record.ts';

export type TaskAcceptance = 'none' | 'single' | 'queue';

export interface TaskMachineOptions {
  executor: TaskExecutor;
  acceptance: TaskAcceptance;
  /** Tasks that may wait behind the running one (queue mode). */
  queueDepth: number;
  /**
   * How long requestInput waits for a reply; undefined = DEFAULT_INPUT_TIMEOUT_SECS (the manifest's
   * default, so a task waiting for input never holds the queue for ever), 0 = no limit.
   */
  inputTimeoutSecs?: number;
  /** Finished tasks kept live in memory (oldest dropped first; the store still has them). */
  maxLiveTasks: number;
  /** Bytes of content those finished tasks keep at most (live-tasks.ts; default DEFAULT_MAX_LIVE_BYTES). */
  maxLiveBytes?: number;
  store: TaskStore;
  stream: SubscriberBounds;
  /** Every event of every task, after subscribers got it (push notifications hook in here). */
  onEvent?: (rec: TaskRecord, resp: StreamResponse) => void;
  /** Told when a task starts and stops keeping the capsule awake (tasks.ts keepsAwake; telemetry/activity.ts). */
  activity?: Activity;
  /**
   * Where the resume points of tasks waiting for input are kept (../store/resume-points.ts), so a
   * stop leaves such a task to the next process (resumable.ts). Default: none (a stop fails it).
   */
  resumePoints?: ResumeStore;
  /** A store save failed (the task goes on in memory). Default: one line on stderr. */
  onStoreError?: (taskId: string, e: unknown) => void;
  /**
   * How long a `working` state may wait for its write (task-saves.ts `later`): only for a store
   * no other process reads, since a status event is then sent before its state is stored.
   * Default 0: every state is written at once.
   */
  workingSaveDelayMs?: number;
}

/** Refuses an acceptance mode or queue depth the machine does not know (E-A2A-002, naming the field). */
export function checkOptions(o: TaskMachineOptions): void {
  if (!['none', 'single', 'queue'].includes(o.acceptance)) {
    throw new MurError('E-A2A-002', `unknown task acceptance '${String(o.acceptance)}'`, {
      hint: "lifecycle.task_acceptance is one of 'none', 'single', 'queue'",
      location: { field: 'lifecycle.task_acceptance' },
    });
  }
  if (!Number.isInteger(o.queueDepth) || o.queueDepth < 0) {
    throw new MurError('E-A2A-002', `queue depth must be a non-negative integer, got ${o.queueDepth}`, {
      hint: 'set lifecycle.queue_depth to 0 or more',
      location: { field: 'lifecycle.queue_depth' },
    });
  }
}
