/**
 * The loop's resume point (docs/a2a.md "Restart"): taken when a tool call asks for input during an
 * A2A task (a tool's `request-input`, an MCP server's elicitation), it is everything the loop needs
 * to continue the task in another process as if that call were still pending: the task's input,
 * the conversation so far (up to the assistant turn that made the call, and the results of the
 * calls of that turn before it), the pending call, the turn, the reopen state and the task's
 * totals. Plain JSON; the A2A task machine stores it while the task waits
 * (runtime/a2a/tasks/resumable.ts, which bounds it to 16 MiB as the conversation record is bounded).
 *
 * Resuming re-runs the pending call from its start with the caller's reply queued: its first
 * request-input returns the reply at once. So a tool's side effects before it asked happen again
 * (at-least-once).
 */
import { MurError } from '../errors.ts';
import type { ConversationMessage, ToolCallBlock } from '../inference/wire.ts';
import type { TaskProgress, Totals } from './agent-loop.ts';

/** The task as runTask got it (capsule-session.ts TaskInput). */
export interface ResumedTask {
  taskId: string;
  contextId: string;
  owner?: { tenant: string; user: string };
  text: string;
  source: 'a2a' | 'task_md';
  origin?: string;
  trust?: string;
  messageId?: string;
  traceparent?: string;
}

export interface LoopResumePoint {
  v: 1;
  task: ResumedTask;
  /** The task's input as hooks read it (task-io): the text and any reopen feedback. */
  asGiven: string;
  /** What the call asked. */
  prompt: string;
  history: ConversationMessage[];
  /** Indices of `history` already in the conversation record (loaded or held history): never appended again. */
  recorded: number[];
  /** The pending tool call and its turn (within the attempt). */
  call: ToolCallBlock;
  turn: number;
  turnsBefore: number;
  reopens: number;
  feedback: string[];
  /** What the task has counted so far (turns, tokens, calls; the pending call not yet). */
  totals: Totals;
}

/** The point of a task whose `progress` has a tool call running; undefined when none does (nothing to resume at). */
export function takeResumePoint(o: {
  task: ResumedTask;
  asGiven: string;
  prompt: string;
  history: readonly ConversationMessage[];
  isRecorded: (m: ConversationMessage) => boolean;
  progress: TaskProgress;
  totals: Totals;
}): LoopResumePoint | undefined {
  const call = o.progress.call;
  if (!call) return undefined;
  const recorded: number[] = [];
  o.history.forEach((m, i) => {
    if (o.isRecorded(m)) recorded.push(i);
  });
  return {
    v: 1,
    task: o.task,
    asGiven: o.asGiven,
    prompt: o.prompt,
    history: o.history.slice(),
    recorded,
    call: call.block,
    turn: call.turn,
    turnsBefore: o.progress.turnsBefore,
    reopens: o.progress.reopens,
    feedback: o.progress.feedback.slice(),
    totals: { ...o.totals },
  };
}

function unusable(what: string): MurError {
  return new MurError('E-RUN-066', `the task cannot be resumed: its resume point ${what}`, {
    hint: 'send the message again as a new task (same contextId); the point was written by a runtime of another version, or changed by hand',
  });
}

/**
 * Reads a stored point back, checked, with the tool calls of the pending turn still to run (the
 * pending one first). Throws E-RUN-066 naming what is wrong.
 */
export function readResumePoint(raw: unknown): { point: LoopResumePoint; calls: ToolCallBlock[] } {
  const p = raw as Partial<LoopResumePoint> | undefined;
  if (p?.v !== 1) throw unusable(`has version ${JSON.stringify(p?.v)}, not 1`);
  if (!p.task || typeof p.task.taskId !== 'string' || typeof p.task.text !== 'string') throw unusable('has no task');
  if (!Array.isArray(p.history) || !Array.isArray(p.recorded)) throw unusable('has no conversation');
  if (!p.call || typeof p.call.id !== 'string' || typeof p.call.name !== 'string') throw unusable('has no pending tool call');
  if (typeof p.turn !== 'number' || typeof p.turnsBefore !== 'number' || typeof p.reopens !== 'number' || !p.totals) throw unusable('has no turn');
  const id = p.call.id;
  const turn = [...p.history].reverse().find((m) => m.role === 'assistant' && m.content.some((b) => b.type === 'tool_call' && b.id === id));
  const blocks = (turn?.content ?? []).filter((b): b is ToolCallBlock => b.type === 'tool_call');
  const at = blocks.findIndex((b) => b.id === id);
  if (at < 0) throw unusable(`names tool call ${id}, which no assistant turn of its conversation made`);
  return { point: p as LoopResumePoint, calls: blocks.slice(at) };
}

/** A task the session runs (capsule-session.ts): what a resume point is taken from. */
export interface RunningTask {
  input: ResumedTask;
  asGiven: string;
  output?: string;
  history: ConversationMessage[];
  progress: TaskProgress;
  /** What the task counted in the process(es) before this one (a resumed task); zero otherwise. */
  carried: Totals;
  /** The session's totals when this run of the task began. */
  before: Totals;
  started: number;
}

export const NO_TOTALS: Totals = Object.freeze({ turns: 0, inputTokens: 0, outputTokens: 0, toolCalls: 0, shellCalls: 0 });

/** What a task has counted: the session's totals since `before`, plus what it `carried` from before a restart. */
export function taskTotals(now: Totals, before: Totals, carried: Totals): Totals {
  const t = { ...NO_TOTALS };
  for (const k of Object.keys(t) as (keyof Totals)[]) t[k] = now[k] - before[k] + carried[k];
  return t;
}

/**
 * `ask` (a task's request-input) with a resume point of where the loop is (`pointOf`), except that
 * the first call returns `reply` at once when one is queued (a resumed task's pending call).
 */
export function askingWith(
  ask: (prompt: string, resume?: object) => Promise<string>,
  reply: string | undefined,
  pointOf: (prompt: string) => LoopResumePoint | undefined,
): (prompt: string) => Promise<string> {
  let queued = reply;
  return async (prompt) => {
    if (queued === undefined) return ask(prompt, pointOf(prompt));
    const r = queued;
    queued = undefined;
    return r;
  };
}
