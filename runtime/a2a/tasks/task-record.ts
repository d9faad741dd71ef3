/**
 * One task as the task machine (tasks.ts) keeps it: the record, who owns it, and the SDK shapes made
 * from it (the `Task` snapshot, status and artifact events, the context the executor gets). Pure
 * builders over a record, so the machine itself is only the state changes and their order.
 */
import { randomUUID } from 'node:crypto';
import type { Artifact, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { ServerCallContext, resolveUserScope } from '@a2a-js/sdk/server';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { ConversationOwner } from '../../inference/conversation-store.ts';
import type { TaskContext, TaskOrigin, TaskState, TaskTrust } from '../core/executor.ts';
import { agentMessage, artifact as mkArtifact, fromCoreState, textPart, toCoreState } from '../core/wire.ts';
import { taskInputText } from './input-text.ts';
import type { Subscriber } from './stream.ts';

/** What the handler hands over to create a task: a validated message and who sent it. */
export interface NewTask {
  message: Message;
  origin: TaskOrigin;
  trust: TaskTrust;
  traceparent: string | undefined;
  /** The caller's call context (owner scoping: user and tenant). */
  caller: ServerCallContext;
}

export interface TaskRecord {
  readonly id: string;
  readonly contextId: string;
  readonly messageId: string;
  text: string;
  readonly origin: TaskOrigin;
  readonly trust: TaskTrust;
  readonly traceparent: string | undefined;
  /** Owner scope key (tenant + user, as the SDK's stores scope). */
  readonly owner: string;
  /** Context the task is saved under (user and tenant of its creator only). */
  readonly ownerContext: ServerCallContext;
  state: TaskState;
  statusMessage: Message | undefined;
  timestamp: string;
  artifacts: Artifact[];
  responseIdx: number;
  responseText: string;
  thinkingStarted: boolean;
  history: Message[];
  subs: Set<Subscriber>;
  waiters: Set<() => void>;
  input: { resolve: (s: string) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout } | undefined;
  abort: AbortController;
  final: boolean;
  /** What it keeps in memory once final (live-tasks.ts retainedBytes); 0 before. */
  retained: number;
  artifactSeq: number;
  saving: Promise<void>;
  /** A resume point of its current wait for input is stored (resumable.ts): a stop keeps the task. */
  resumable: boolean;
  /** The writes of its resume point (resumable.ts), in order; undefined while it never had one. */
  resumePoint: Promise<void> | undefined;
  /** The reply an adopted task (one a stopped process left waiting) resumes with on its next run. */
  resumeReply: string | undefined;
  /** Left waiting for the next process by a stopping one: this process writes it no more. */
  detached: boolean;
}

/** Owner scope of a call, the way the SDK's in-memory and database stores scope it. */
export function ownerKey(ctx: ServerCallContext): string {
  return `${ctx.tenant ?? ''}\u0000${resolveUserScope(ctx)}`;
}

/** The same owner scope as the conversation store keeps it: the SDK task table's tenant and owner. */
export function callerOwner(ctx: ServerCallContext): ConversationOwner {
  return { tenant: ctx.tenant ?? '', user: resolveUserScope(ctx) };
}

/** A task the caller cannot see looks exactly like one that does not exist (no existence leak). */
export function taskNotFound(id: string): Error {
  return new TaskNotFoundError({
    message: `task '${id}' not found (unknown id, or evicted after it ended)`,
    metadata: { taskId: id },
  });
}

/** A new record in `submitted`, its first history entry the caller's message. */
export function newRecord(t: NewTask): TaskRecord {
  const m = t.message;
  const rec: TaskRecord = {
    id: randomUUID(),
    contextId: m.contextId || randomUUID(),
    messageId: m.messageId,
    text: taskInputText(m),
    origin: t.origin,
    trust: t.trust,
    traceparent: t.traceparent,
    owner: ownerKey(t.caller),
    ownerContext: new ServerCallContext({ user: t.caller.user, tenant: t.caller.tenant, requestedVersion: t.caller.requestedVersion }),
    state: 'submitted',
    statusMessage: undefined,
    timestamp: new Date().toISOString(),
    artifacts: [],
    responseIdx: -1,
    responseText: '',
    thinkingStarted: false,
    history: [],
    subs: new Set(),
    waiters: new Set(),
    input: undefined,
    abort: new AbortController(),
    final: false,
    retained: 0,
    artifactSeq: 0,
    saving: Promise.resolve(),
    resumable: false,
    resumePoint: undefined,
    resumeReply: undefined,
    detached: false,
  };
  rec.history.push({ ...m, taskId: rec.id, contextId: rec.contextId });
  return rec;
}

/** What a record keeps of its first message beside the stored task (a resume point carries it). */
export interface RecordOrigin {
  messageId: string;
  text: string;
  origin: TaskOrigin;
  trust: TaskTrust;
  traceparent: string | undefined;
}

/**
 * The live record of a task as the store has it, saved by another process (a task it left waiting
 * for input), under the owner context `owner` (its creator's user and tenant).
 */
export function storedRecord(task: Task, first: RecordOrigin, owner: ServerCallContext): TaskRecord {
  const responseIdx = task.artifacts.findIndex((a) => a.artifactId === 'response');
  const seq = task.artifacts.map((a) => /^artifact-(\d+)$/.exec(a.artifactId)?.[1]).filter((n) => n !== undefined);
  const text = (p: Part) => (p.content?.$case === 'text' ? p.content.value : '');
  return {
    id: task.id,
    contextId: task.contextId,
    ...first,
    owner: ownerKey(owner),
    ownerContext: owner,
    state: fromCoreState(task.status?.state) ?? 'input-required',
    statusMessage: task.status?.message,
    timestamp: task.status?.timestamp ?? new Date().toISOString(),
    artifacts: task.artifacts.slice(),
    responseIdx,
    responseText: responseIdx >= 0 ? task.artifacts[responseIdx]!.parts.map(text).join('') : '',
    thinkingStarted: false,
    history: task.history.slice(),
    subs: new Set(),
    waiters: new Set(),
    input: undefined,
    abort: new AbortController(),
    final: false,
    retained: 0,
    artifactSeq: Math.max(0, ...seq.map(Number)),
    saving: Promise.resolve(),
    resumable: false,
    resumePoint: undefined,
    resumeReply: undefined,
    detached: false,
  };
}

/** The SDK `Task` of a record, its history cut to the last `historyLength` messages when given. */
export function snapshot(rec: TaskRecord, historyLength?: number): Task {
  let history = rec.history;
  if (historyLength !== undefined) history = historyLength <= 0 ? [] : history.slice(-historyLength);
  return {
    id: rec.id,
    contextId: rec.contextId,
    status: { state: toCoreState(rec.state), message: rec.statusMessage, timestamp: rec.timestamp },
    artifacts: rec.artifacts.slice(),
    history: history.slice(),
    metadata: undefined,
  };
}

/**
 * What `snapshot(rec)` is made of, by identity: equal lists (=== element by element) mean equal
 * snapshots, because a record's status message, artifacts and messages are replaced or appended,
 * never changed in place (setState, setResponse, executor-events' artifact, the history pushes).
 * The A2A server's answer memo (server/answer-memo.ts) keys on it.
 */
export function snapshotParts(rec: TaskRecord): unknown[] {
  return [rec, rec.state, rec.statusMessage, rec.timestamp, rec.artifacts.length, ...rec.artifacts, ...rec.history];
}

/** What the executor of a record's task is told about it. */
export function taskContext(rec: TaskRecord): TaskContext {
  return {
    taskId: rec.id,
    contextId: rec.contextId,
    owner: callerOwner(rec.ownerContext),
    messageId: rec.messageId,
    text: rec.text,
    origin: rec.origin,
    trust: rec.trust,
    ...(rec.traceparent ? { traceparent: rec.traceparent } : {}),
    signal: rec.abort.signal,
  };
}

/** The status-update event of a record's current state. */
export function statusEvent(rec: TaskRecord): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: rec.id,
        contextId: rec.contextId,
        status: { state: toCoreState(rec.state), message: rec.statusMessage, timestamp: rec.timestamp },
        metadata: undefined,
      },
    },
  };
}

export function artifactEvent(rec: TaskRecord, a: Artifact, append: boolean, lastChunk: boolean): StreamResponse {
  return { payload: { $case: 'artifactUpdate', value: { taskId: rec.id, contextId: rec.contextId, artifact: a, append, lastChunk, metadata: undefined } } };
}

/** The one notice a slow reader gets when it catches up after `dropped` events were dropped for it. */
export function laggedNotice(rec: TaskRecord, dropped: number): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: rec.id,
        contextId: rec.contextId,
        status: {
          state: toCoreState(rec.state),
          message: agentMessage(`stream lagged: ${dropped} event(s) dropped for this slow reader; tasks/get returns the full task`, rec.id, rec.contextId),
          timestamp: new Date().toISOString(),
        },
        metadata: { murmur: { lagged: dropped } },
      },
    },
  };
}

/** Sets the whole text of the record's `response` artifact (created on first use); returns it. */
export function setResponse(rec: TaskRecord, text: string): Artifact {
  rec.responseText = text;
  const a = mkArtifact('response', [textPart(text)], { name: 'response' });
  if (rec.responseIdx < 0) {
    rec.responseIdx = rec.artifacts.length;
    rec.artifacts.push(a);
  } else rec.artifacts[rec.responseIdx] = a;
  return a;
}
