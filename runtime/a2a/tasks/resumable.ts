/**
 * Tasks that outlive their process while they wait for input (docs/a2a.md "Restart"). When an
 * executor asks for input with a resume point (core/executor.ts `requestInput(prompt, resume)`),
 * the point is kept in the durable store (../store/resume-points.ts) with what the record keeps of
 * the task's first message; once stored, the task is `resumable`: a SIGTERM stop leaves it
 * `input-required` for the next process, and it no longer keeps the capsule awake.
 *
 * The next process adopts every such task before it serves: a live record in `input-required`
 * whose reply starts a run of the executor with the point and the reply (TaskContext.resumed), on
 * the same task and context ids; its input timeout counts from when the task asked, in whichever
 * process that was.
 */
import { ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { MurError, errMessage } from '../../errors.ts';
import type { ResumePoint, TaskContext } from '../core/executor.ts';
import { fromCoreState } from '../core/wire.ts';
import type { ResumeStore } from '../store/resume-points.ts';
import { armInputTimeout, type TaskOps } from './executor-events.ts';
import { storedRecord, taskContext, type RecordOrigin, type TaskRecord } from './task-record.ts';

/** Bytes a stored resume point may have at most, as the session's conversation record (16 MiB). */
export const RESUME_MAX_BYTES = 16 * 1024 * 1024;

/** The row's JSON: the record's part (its first message) and the executor's. */
interface StoredPoint {
  v: 1;
  task: RecordOrigin;
  executor: ResumePoint;
}

function warn(line: string): void {
  process.stderr.write(`mur: ${line}\n`);
}

/**
 * Stores `point` for `rec`'s wait `input`; once stored, and if the task still waits on `input`,
 * marks it resumable and calls `kept`. A point over the bound or a failed write leaves the task
 * waiting as a task without one (E-RUN-065 on stderr).
 */
export function keepResumePoint(store: ResumeStore, rec: TaskRecord, input: NonNullable<TaskRecord['input']>, point: ResumePoint, kept: () => void): void {
  const first: RecordOrigin = { messageId: rec.messageId, text: rec.text, origin: rec.origin, trust: rec.trust, traceparent: rec.traceparent };
  const text = JSON.stringify({ v: 1, task: first, executor: point } satisfies StoredPoint);
  const bytes = Buffer.byteLength(text);
  if (bytes > RESUME_MAX_BYTES) {
    warn(
      `task ${rec.id} waits for input without a resume point: it would take ${bytes} bytes, over ${RESUME_MAX_BYTES} [E-RUN-065]; a stop of this process fails the task`,
    );
    return;
  }
  const askedAt = Date.now();
  rec.resumePoint = (rec.resumePoint ?? Promise.resolve())
    .then(() => store.save(rec.id, askedAt, text))
    .then(
      () => {
        if (rec.input !== input || rec.final) return;
        rec.resumable = true;
        kept();
      },
      (e: unknown) =>
        warn(`task ${rec.id} waits for input without a resume point: saving it failed: ${errMessage(e)} [E-RUN-065]; a stop of this process fails the task`),
    ); // The caller is answered once the task's state is stored (handler.ts awaits rec.saving): by
  // then its resume point is too, so a task a caller sees waiting already survives a stop.
  const stored = rec.resumePoint;
  rec.saving = rec.saving.then(() => stored);
}

/** Deletes `rec`'s resume point once the task has ended (after its writes). */
export function dropResumePoint(store: ResumeStore, rec: TaskRecord): void {
  if (!rec.resumePoint) return;
  rec.resumePoint = rec.resumePoint
    .then(() => store.drop(rec.id))
    .catch((e: unknown) => warn(`task ${rec.id}: deleting its resume point failed: ${errMessage(e)}`));
}

function parsePoint(text: string): StoredPoint | undefined {
  try {
    const p = JSON.parse(text) as Partial<StoredPoint>;
    if (p.v !== 1 || !p.task || typeof p.task.text !== 'string' || !p.executor || typeof p.executor !== 'object') return undefined;
    return p as StoredPoint;
  } catch {
    return undefined;
  }
}

/** What the machine lends for an adoption: a record's end, and a resumed run queued. */
export interface AdoptOps extends Pick<TaskOps, 'finalize'> {
  /** Whether task `id` is live in this machine already (adopted before, or its own). */
  has(id: string): boolean;
  /** Makes `rec` live in this machine (before its wait is armed); false when it already is (a concurrent adoption). */
  adopt(rec: TaskRecord): boolean;
  /** Queues `rec`'s resumed run (its reply is in rec.resumeReply). */
  enqueue(rec: TaskRecord): void;
}

/**
 * Adopts the tasks the store holds waiting for input with a resume point (claimed for this
 * process): each becomes a live `input-required` record, resumable, whose reply queues a resumed
 * run; one whose wait has outlived `inputTimeoutSecs` since it asked fails at once, as it would
 * have in its own process. Returns how many still wait.
 */
export async function adoptWaiting(store: ResumeStore, tasks: TaskStore, inputTimeoutSecs: number, ops: AdoptOps): Promise<number> {
  let waiting = 0;
  for (const w of await store.waiting()) {
    if (ops.has(w.id)) continue;
    const kept = await store.load(w.id);
    const point = kept ? parsePoint(kept.point) : undefined;
    const owner = new ServerCallContext({ user: { isAuthenticated: true, userName: w.owner }, ...(w.tenant ? { tenant: w.tenant } : {}) });
    const task = await tasks.load(w.id, owner);
    if (!task || fromCoreState(task.status?.state) !== 'input-required') continue;
    const rec = storedRecord(task, point?.task ?? { messageId: '', text: '', origin: 'user', trust: 'untrusted', traceparent: undefined }, owner);
    rec.resumePoint = Promise.resolve();
    rec.resumable = point !== undefined;
    if (!ops.adopt(rec)) continue;
    if (!point) {
      ops.finalize(rec, 'failed', unusable(rec.id, kept ? 'unreadable' : 'gone').message);
      continue;
    }
    const input: NonNullable<TaskRecord['input']> = {
      resolve: (reply) => {
        rec.resumeReply = reply;
        ops.enqueue(rec);
      },
      // Nothing waits on an adopted task's input: its timeout and its end finalize the record.
      reject: () => undefined,
    };
    rec.input = input;
    if (inputTimeoutSecs > 0) armInputTimeout(rec, input, ops, inputTimeoutSecs, kept!.askedAt + inputTimeoutSecs * 1000 - Date.now());
    if (!rec.final) waiting++;
  }
  return waiting;
}

function unusable(taskId: string, why: string): MurError {
  return new MurError('E-RUN-066', `task ${taskId} cannot be resumed: its resume point is ${why}`, {
    hint: 'send the message again as a new task (same contextId); the store was changed by hand, or by a runtime of another version',
  });
}

/** The context of `rec`'s resumed run: its point read back from the store and the reply it waited for. */
export async function resumedContext(store: ResumeStore, rec: TaskRecord, reply: string): Promise<TaskContext> {
  const kept = await store.load(rec.id);
  const point = kept ? parsePoint(kept.point) : undefined;
  if (!point) throw unusable(rec.id, kept ? 'unreadable' : 'gone');
  return { ...taskContext(rec), resumed: { point: point.executor, reply } };
}

/** Waiting for input with its resume point stored: a stop leaves it to the next process. */
export function parked(rec: TaskRecord): boolean {
  return !rec.final && rec.state === 'input-required' && rec.resumable;
}

/**
 * Whether a task keeps its capsule awake: every unfinished one but a parked one. A task waiting
 * for input without a resume point counts: its executor waits inside the component's
 * request-input call, which a stopped process cannot resume (a stop fails the task), so a capsule
 * put to sleep then would lose it. With a resume point the next process continues it, so a
 * reply wakes the capsule (docs/a2a.md "Restart").
 */
export function keepsAwake(rec: TaskRecord): boolean {
  return !rec.final && !rec.detached && !parked(rec);
}
