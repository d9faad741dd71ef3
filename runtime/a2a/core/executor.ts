/**
 * The seam between the A2A server (runtime/a2a/server/server.ts) and whatever runs a task — in the
 * capsule runtime, the agent loop. The server owns ids, states, streaming, acceptance and
 * cancellation; the executor only turns one task's input text into an outcome and reports what
 * happens on the way. See docs/a2a.md ("Executor interface").
 */
import { MurError } from '../../errors.ts';
import type { ConversationOwner } from '../../inference/conversation-store.ts';

/** Where a task came from, as read from `x-murmur-task-origin` (absent header = `user`). */
export type TaskOrigin = 'user' | 'peer' | 'completion' | 'event';
/** Trust class of a task, from `x-murmur-task-trust` (absent or unknown = `untrusted`). */
export type TaskTrust = 'trusted' | 'untrusted';

/** A2A task states, spelled as in A2A 0.3 (the 1.0 wire uses `TASK_STATE_*`). */
export type TaskState = 'submitted' | 'working' | 'input-required' | 'completed' | 'failed' | 'rejected' | 'canceled';

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['completed', 'failed', 'rejected', 'canceled']);

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

export interface TaskContext {
  /** Server-minted task id (uuid). */
  readonly taskId: string;
  /** The client's contextId when it sent one, else server-minted (uuid). */
  readonly contextId: string;
  /**
   * The caller who sent the task, as the task store scopes it (tenant and user). A conversation
   * is the owner's and the context id's together: another caller's same contextId is another one.
   */
  readonly owner: ConversationOwner;
  /** The sender's messageId of the message that created the task. */
  readonly messageId: string;
  /**
   * The first message as text: its text parts joined with "\n", then its file parts (a text
   * file's content under a line naming it, any other file a note; tasks/input-text.ts).
   */
  readonly text: string;
  readonly origin: TaskOrigin;
  readonly trust: TaskTrust;
  /** The caller's W3C traceparent, when it sent a well-formed one. */
  readonly traceparent?: string;
  /**
   * Aborted when the task must stop: `tasks/cancel` (reason: TaskCanceledError) or an expired
   * `requestInput` (reason: InputTimeoutError). Check it between turns and pass it to inference
   * and tool calls. The task's final state is already decided when it fires; the executor's
   * returned outcome is then ignored.
   */
  readonly signal: AbortSignal;
  /**
   * Set when this run resumes a task a stopped process left waiting for input: the resume point
   * the executor handed to `requestInput` then, and the caller's reply. The executor rebuilds its
   * run from the point, the reply answering the first request-input of the re-run at once.
   */
  readonly resumed?: { readonly point: ResumePoint; readonly reply: string };
}

/**
 * What an executor needs to continue a task waiting for input in another process (docs/a2a.md
 * "Restart"): plain JSON, opaque to the task machine, which keeps it in the durable store while
 * the task waits.
 */
export type ResumePoint = Record<string, unknown>;

/** An artifact produced by the task (a tool call, a hook `artifact` arm, a file summary…). */
export interface ArtifactInput {
  name?: string;
  description?: string;
  /** Text content (one text part). */
  text?: string;
  /** Structured content (one data part). */
  data?: unknown;
  metadata?: Record<string, unknown>;
}

/**
 * Everything an executor can report while it runs. All methods return immediately (never block
 * on a slow stream reader) and are silently ignored once the task has reached a final state.
 */
export interface TaskEvents {
  /** A progress note: the task is (still) `working`; `message` goes into the status message. */
  status(message?: string): void;
  /** Store an artifact on the task and stream it. */
  artifact(a: ArtifactInput): void;
  /** A response text chunk (`murmur:text/chunks` emit-chunk). Accumulates into the `response` artifact. */
  textChunk(s: string): void;
  /** A thinking chunk: streamed only, never stored on the task. */
  thinkingChunk(s: string): void;
  /**
   * One step of the task as the session's trace records it (`{event_type, ...}`: a turn, a tool
   * or shell call, a denial…): streamed only as a `step` artifact, never stored, cut to a bound.
   */
  step(record: Record<string, unknown>): void;
  /**
   * `murmur:task/task` request-input: the task goes `input-required` with `prompt` as its status
   * message; resolves with the text of the next message/send carrying this taskId. Rejects with
   * InputTimeoutError after inputTimeoutSecs (the task is then `failed`), with TaskCanceledError
   * on cancel, and immediately when another request is already pending. With `resume` (the
   * executor can continue the task from it), the machine stores it, so the task outlives a stop.
   */
  requestInput(prompt: string, resume?: ResumePoint): Promise<string>;
}

export type TaskOutcome = {
  state: 'completed' | 'failed' | 'canceled' | 'rejected';
  /** Final response text: becomes the `response` artifact (replacing streamed chunks) and the status message. */
  text?: string;
  /** Why the task failed/was rejected/canceled: the status message for those states. */
  reason?: string;
};

/**
 * Runs one task. A thrown error ends the task `failed` with the error's message (never its stack).
 */
export type TaskExecutor = (ctx: TaskContext, ev: TaskEvents) => Promise<TaskOutcome>;

/** Reason of `ctx.signal` and rejection of a pending requestInput when the task is canceled. */
export class TaskCanceledError extends MurError {
  constructor(taskId: string) {
    super('E-A2A-011', `task ${taskId} was canceled`, {
      hint: 'a client called tasks/cancel; stop at the next safe point',
    });
    this.name = 'TaskCanceledError';
  }
}

/** Rejection of requestInput (and reason of `ctx.signal`) when no reply came in time. */
export class InputTimeoutError extends MurError {
  constructor(taskId: string, secs: number) {
    super('E-A2A-010', `input timeout: task ${taskId} got no reply within ${secs}s`, {
      hint: 'raise lifecycle.input_timeout_secs, or reply sooner with message/send carrying the taskId',
    });
    this.name = 'InputTimeoutError';
  }
}

/**
 * What `murmur:task/task` request-input must return when no A2A task is running (tool world
 * outside a task, or any other world): an immediate error, per the WIT contract.
 */
export function requestInputUnavailable(): MurError {
  return new MurError('E-A2A-013', 'request-input is only available while the capsule runs an A2A task', {
    hint: 'send the capsule a task over A2A (message/send), or do not call request-input from this context',
  });
}
