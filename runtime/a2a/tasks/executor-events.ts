/**
 * The `TaskEvents` one task's executor reports through: status lines, artifacts, streamed response
 * and thinking chunks, and request-input with its timeout. Each call becomes a state change of the
 * task machine (tasks.ts) through the few operations it lends here, so the order of saves and
 * events stays the machine's. Both ways through redaction.ts: what the executor reports and the
 * outcome it returns.
 */
import type { Artifact, Part } from '@a2a-js/sdk';
import { MurError, errMessage } from '../../errors.ts';
import {
  InputTimeoutError,
  TaskCanceledError,
  type ArtifactInput,
  type TaskContext,
  type TaskEvents,
  type TaskExecutor,
  type TaskOutcome,
  type ResumePoint,
  type TaskState,
} from '../core/executor.ts';
import { artifact as mkArtifact, dataPart, textPart } from '../core/wire.ts';
import { redactedEvents, redactedOutcome } from './redaction.ts';
import { boundedStep } from './step-record.ts';
import { setResponse, type TaskRecord } from './task-record.ts';

/** The task machine's state changes an executor's reports go through. */
export interface TaskOps {
  setState(rec: TaskRecord, state: TaskState, message?: string): void;
  /** Write `rec` as it is now, or within the store's delay for what may wait (task-saves.ts `later`). */
  later(rec: TaskRecord): void;
  emitArtifact(rec: TaskRecord, a: Artifact, append: boolean, lastChunk: boolean): void;
  finalize(rec: TaskRecord, state: TaskState, text?: string): void;
  /** Keep `point` for `rec`'s wait `input` in the durable store, if there is one (resumable.ts). */
  keepResumePoint(rec: TaskRecord, input: NonNullable<TaskRecord['input']>, point: ResumePoint): void;
}

/** The reports of `rec`'s executor; `inputTimeoutSecs` 0 = request-input waits without limit. */
export function executorEvents(rec: TaskRecord, ops: TaskOps, inputTimeoutSecs: number): TaskEvents {
  let steps = 0;
  return {
    status: (message?: string) => {
      if (rec.final || rec.state === 'input-required') return;
      ops.setState(rec, 'working', message);
    },
    artifact: (a: ArtifactInput) => {
      if (rec.final) return;
      const parts: Part[] = [];
      if (a.text !== undefined) parts.push(textPart(a.text));
      if (a.data !== undefined) parts.push(dataPart(a.data));
      if (parts.length === 0) parts.push(textPart(''));
      const art = mkArtifact(`artifact-${++rec.artifactSeq}`, parts, {
        ...(a.name !== undefined ? { name: a.name } : {}),
        ...(a.description !== undefined ? { description: a.description } : {}),
        ...(a.metadata !== undefined ? { metadata: a.metadata } : {}),
      });
      rec.artifacts.push(art);
      // An artifact of a running task may wait for the task's next write, as a working note does
      // (task-saves.ts): a tool call's record was a whole-task write of its own on every call.
      ops.later(rec);
      ops.emitArtifact(rec, art, false, true);
    },
    textChunk: (s: string) => {
      if (rec.final || s === '') return;
      const first = rec.responseIdx < 0;
      setResponse(rec, rec.responseText + s);
      ops.emitArtifact(rec, mkArtifact('response', [textPart(s)], { name: 'response' }), !first, false);
    },
    thinkingChunk: (s: string) => {
      if (rec.final || s === '') return;
      const first = !rec.thinkingStarted;
      rec.thinkingStarted = true;
      ops.emitArtifact(rec, mkArtifact('thinking', [textPart(s)], { name: 'thinking', metadata: { murmur: { kind: 'thinking' } } }), !first, false);
    },
    step: (record: Record<string, unknown>) => {
      if (rec.final) return;
      // Each step is a whole artifact of its own (never appended to), streamed like a thinking
      // chunk: droppable under the stream's lag bounds and never kept on the task.
      const art = mkArtifact(`step-${++steps}`, [dataPart(boundedStep(record))], { name: 'step', metadata: { murmur: { kind: 'step' } } });
      ops.emitArtifact(rec, art, false, true);
    },
    requestInput: (prompt: string, resume?: ResumePoint) => requestInput(rec, ops, inputTimeoutSecs, prompt, resume),
  };
}

/** Puts `rec` in input-required until a reply (replyTo in tasks.ts), the timeout, or the task's end. */
function requestInput(rec: TaskRecord, ops: TaskOps, inputTimeoutSecs: number, prompt: string, resume: ResumePoint | undefined): Promise<string> {
  if (rec.final) return Promise.reject(new TaskCanceledError(rec.id));
  if (rec.input) {
    return Promise.reject(
      new MurError('E-A2A-012', `task ${rec.id} already waits for input`, {
        hint: 'call request-input again only after the previous call returned',
      }),
    );
  }
  return new Promise<string>((resolve, reject) => {
    const input: NonNullable<TaskRecord['input']> = { resolve, reject };
    if (inputTimeoutSecs > 0) armInputTimeout(rec, input, ops, inputTimeoutSecs, inputTimeoutSecs * 1000);
    rec.input = input;
    ops.setState(rec, 'input-required', prompt);
    if (resume) ops.keepResumePoint(rec, input, resume);
  });
}

/**
 * Fails `rec` with the input timeout of `secs` in `ms` (its wait began `secs` before the deadline:
 * an adopted task's wait began in the process that asked), unless `input` was answered first.
 */
export function armInputTimeout(rec: TaskRecord, input: NonNullable<TaskRecord['input']>, ops: Pick<TaskOps, 'finalize'>, secs: number, ms: number): void {
  const expire = () => {
    if (rec.input !== input) return;
    rec.input = undefined;
    const err = new InputTimeoutError(rec.id, secs);
    input.reject(err);
    rec.abort.abort(err);
    ops.finalize(rec, 'failed', err.message);
  };
  if (ms <= 0) {
    rec.input = input;
    expire();
    return;
  }
  input.timer = setTimeout(expire, ms);
  input.timer.unref?.();
}

/** The outcome of a task whose executor (or what runs before it) threw: failed, with the error's message as its reason. */
export function failedBy(e: unknown): TaskOutcome {
  return { state: 'failed', reason: errMessage(e) };
}

/** Runs one task's executor: its reports and outcome redacted; a throw or an invalid outcome fails the task with the reason. */
export async function runExecutor(executor: TaskExecutor, ctx: TaskContext, events: TaskEvents): Promise<TaskOutcome> {
  let outcome: TaskOutcome;
  try {
    outcome = await executor(ctx, redactedEvents(events));
    if (!outcome || !['completed', 'failed', 'canceled', 'rejected'].includes(outcome.state)) {
      outcome = { state: 'failed', reason: `executor returned an invalid outcome: ${JSON.stringify(outcome)}` };
    }
  } catch (e) {
    outcome = failedBy(e);
  }
  return redactedOutcome(outcome);
}
