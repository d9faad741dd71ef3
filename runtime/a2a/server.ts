/**
 * The capsule's A2A server: agent card, JSON-RPC 2.0 (A2A 0.3 and 1.0 method names, selected by
 * the `A2A-Version` header), SSE streaming, task acceptance (none/single/queue), request-input,
 * cancel, origin/trust headers, health probes.
 *
 * Split of work with @a2a-js/sdk (see docs/a2a.md): the SDK's express `jsonRpcHandler` (with
 * `legacyCompat`) does method dispatch, 0.3 ⇄ 1.0 shape translation, error envelopes and SSE
 * framing; this file implements the SDK's `A2ARequestHandler` interface with murmur's task
 * semantics (the SDK's DefaultRequestHandler cannot express acceptance/queue/rejected,
 * request-input replies, one-final-status or bounded subscribers), and puts a strict front door
 * (body limit, parse/envelope/method/version checks with helpful messages) before the SDK.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { Role } from '@a2a-js/sdk';
import type {
  AgentCard,
  Artifact,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
  ListTaskPushNotificationConfigsResponse,
} from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import {
  JsonRpcExtendedAgentCardNotConfiguredError,
  JsonRpcPushNotificationNotSupportedError,
  JsonRpcRequestMalformedError,
  JsonRpcTaskNotCancelableError,
  JsonRpcTaskNotFoundError,
  JsonRpcUnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { MurError } from '../errors.ts';
import {
  InputTimeoutError,
  TaskCanceledError,
  isTerminal,
  type ArtifactInput,
  type TaskContext,
  type TaskEvents,
  type TaskExecutor,
  type TaskOrigin,
  type TaskOutcome,
  type TaskState,
  type TaskTrust,
} from './executor.ts';
import {
  METHODS_0_3,
  METHODS_1_0,
  VERSION_HEADER,
  agentMessage,
  artifact as mkArtifact,
  dataPart,
  messageText,
  normaliseVersion,
  parseOriginTrust,
  textPart,
  toCoreState,
  validTraceparent,
} from './wire.ts';

export type TaskAcceptance = 'none' | 'single' | 'queue';

export interface SkillInput {
  id: string;
  name?: string;
  description?: string;
  tags?: string[];
  examples?: string[];
}

export interface AgentCardInput {
  name: string;
  version: string;
  description: string;
  /** One per LLM-visible tool of the capsule (see `skillsFromTools`). */
  skills?: SkillInput[];
}

export interface A2AServerOptions {
  card: AgentCardInput;
  executor: TaskExecutor;
  /** lifecycle.task_acceptance */
  acceptance: TaskAcceptance;
  /** lifecycle.queue_depth: how many tasks may wait behind the running one (queue mode). Default 16. */
  queueDepth?: number;
  /** lifecycle.input_timeout_secs: how long requestInput waits for a reply. Default: no limit. */
  inputTimeoutSecs?: number;
  /** Bind address. Default 127.0.0.1. */
  host?: string;
  /** Port; 0 (default) = any free port. */
  port?: number;
  /** URL advertised in the agent card. Default `http://<host>:<port>/`. */
  publicUrl?: string;
  /** Largest accepted request body. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Terminal tasks kept for tasks/get (oldest evicted first). Default 1000. */
  maxStoredTasks?: number;
  /** Per-SSE-subscriber bounds; past either, droppable events are dropped and a `lagged` notice sent. */
  stream?: {
    /** Events queued per subscriber before droppable ones are dropped. Default 256. */
    maxQueuedEvents?: number;
    /** Bytes buffered in the subscriber's HTTP response before droppable events are dropped. Default 1 MiB. */
    maxBufferedBytes?: number;
    /** Interval of `: heartbeat` SSE comments; 0 = none. Default 15000. */
    heartbeatMs?: number;
  };
}

export interface A2AServer {
  /** Base URL, e.g. `http://127.0.0.1:40123/` (JSON-RPC endpoint; the card is under it). */
  readonly url: string;
  readonly port: number;
  /** The agent card as served (0.3 and 1.0 fields together). */
  readonly card: Record<string, unknown>;
  /** `single`: resolves when the one task has ended and its executor returned. Never resolves otherwise. */
  readonly done: Promise<void>;
  /** Resolves when no task is running or waiting (immediately if already idle). */
  idle(): Promise<void>;
  /**
   * Whether the server will ever take another task: false once a `single` capsule has its task, for
   * `none`, and while closing. A full queue is transient and does not count (readiness, not load).
   */
  acceptsMore(): boolean;
  /** Counters for tests and metrics. */
  stats(): { tasks: number; running: number; pending: number; subscribers: number; laggedDrops: number };
  /** Cancel unfinished tasks, drop connections, stop listening. */
  close(): Promise<void>;
}

/** Skills for the agent card from a capsule's LLM-visible tools. */
export function skillsFromTools(tools: ReadonlyArray<{ name: string; description?: string }>): SkillInput[] {
  return tools.map((t) => ({ id: t.name, name: t.name, description: t.description ?? t.name, tags: ['tool'] }));
}

// ---------------------------------------------------------------------------------------------
// Task records and subscribers

interface StreamItem {
  resp: StreamResponse;
  /** The stream ends after this item (final status, or input-required interruption). */
  ends: boolean;
}

class Subscriber {
  queue: StreamItem[] = [];
  closed = false;
  dropped = 0;
  private wake: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  constructor(
    readonly rec: TaskRecord,
    private readonly res: http.ServerResponse | undefined,
    private readonly maxQueued: number,
    private readonly maxBuffered: number,
    private readonly onDrop: () => void,
    heartbeatMs: number,
  ) {
    res?.once('close', () => this.close());
    if (res && heartbeatMs > 0) {
      // An SSE comment keeps idle proxies from cutting a long quiet stream. Each write is a whole
      // frame, like the SDK's, so frames never interleave.
      this.heartbeat = setInterval(() => {
        if (res.headersSent && !res.writableEnded && res.writableLength <= this.maxBuffered) res.write(': heartbeat\n\n');
      }, heartbeatMs);
      this.heartbeat.unref();
    }
  }
  dispose(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
  }
  private overloaded(): boolean {
    if (this.queue.length >= this.maxQueued) return true;
    return this.res !== undefined && this.res.writableLength > this.maxBuffered;
  }
  push(item: StreamItem, droppable: boolean): void {
    if (this.closed) return;
    if (droppable && this.overloaded()) {
      this.dropped++;
      this.onDrop();
      return;
    }
    if (this.dropped > 0) {
      this.queue.push({ resp: laggedNotice(this.rec, this.dropped), ends: false });
      this.dropped = 0;
    }
    this.queue.push(item);
    this.signal();
  }
  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.signal();
  }
  private signal(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
  next(): Promise<void> {
    return new Promise((r) => (this.wake = r));
  }
}

interface TaskRecord {
  id: string;
  contextId: string;
  messageId: string;
  text: string;
  origin: TaskOrigin;
  trust: TaskTrust;
  traceparent: string | undefined;
  state: TaskState;
  statusMessage: Message | undefined;
  timestamp: string;
  artifacts: Artifact[];
  /** Index of the `response` artifact in `artifacts`, once there is one. */
  responseIdx: number;
  /** Text of the `response` artifact so far (chunks appended). */
  responseText: string;
  thinkingStarted: boolean;
  history: Message[];
  subs: Set<Subscriber>;
  waiters: Set<() => void>;
  input: { resolve: (s: string) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout } | undefined;
  abort: AbortController;
  final: boolean;
  artifactSeq: number;
}

function laggedNotice(rec: TaskRecord, dropped: number): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: rec.id,
        contextId: rec.contextId,
        status: {
          state: toCoreState(rec.state),
          message: agentMessage(
            `stream lagged: ${dropped} event(s) dropped for this slow reader; tasks/get returns the full task`,
            rec.id,
            rec.contextId,
          ),
          timestamp: new Date().toISOString(),
        },
        metadata: { murmur: { lagged: dropped } },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC errors (codes per A2A; the SDK maps these to 0.3 and 1.0 envelopes)

const invalidParams = (message: string) => new JsonRpcRequestMalformedError({ message, envelopeCode: -32602 });
const taskNotFound = (id: string) =>
  new JsonRpcTaskNotFoundError({
    message: `task '${id}' not found (unknown id, or evicted after it ended)`,
    metadata: { taskId: id },
  });
const unsupported = (message: string) => new JsonRpcUnsupportedOperationError({ message });

function errMessage(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

// ---------------------------------------------------------------------------------------------

export async function startA2AServer(opts: A2AServerOptions): Promise<A2AServer> {
  const host = opts.host ?? '127.0.0.1';
  const queueDepth = opts.queueDepth ?? 16;
  const maxBody = opts.maxBodyBytes ?? 1024 * 1024;
  const maxStored = opts.maxStoredTasks ?? 1000;
  const maxQueued = opts.stream?.maxQueuedEvents ?? 256;
  const maxBuffered = opts.stream?.maxBufferedBytes ?? 1024 * 1024;
  const heartbeatMs = opts.stream?.heartbeatMs ?? 15_000;
  if (!['none', 'single', 'queue'].includes(opts.acceptance)) {
    throw new MurError('E-A2A-002', `unknown task acceptance '${String(opts.acceptance)}'`, {
      hint: "lifecycle.task_acceptance is one of 'none', 'single', 'queue'",
      location: { field: 'lifecycle.task_acceptance' },
    });
  }
  if (!Number.isInteger(queueDepth) || queueDepth < 0) {
    throw new MurError('E-A2A-002', `queue depth must be a non-negative integer, got ${queueDepth}`, {
      hint: 'set lifecycle.queue_depth to 0 or more',
      location: { field: 'lifecycle.queue_depth' },
    });
  }
  const inputTimeoutSecs = opts.inputTimeoutSecs;

  const tasks = new Map<string, TaskRecord>();
  const pending: TaskRecord[] = [];
  let running: TaskRecord | undefined;
  let singleUsed = false;
  let closing = false;
  let laggedDrops = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  let idleWaiters: Array<() => void> = [];
  const resOf = new WeakMap<object, http.ServerResponse>();

  // ---- task bookkeeping ----------------------------------------------------------------------

  function snapshot(rec: TaskRecord, historyLength?: number): Task {
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

  function emit(rec: TaskRecord, resp: StreamResponse, ends: boolean, droppable: boolean): void {
    for (const s of rec.subs) s.push({ resp, ends }, droppable);
  }

  function notify(rec: TaskRecord): void {
    const ws = [...rec.waiters];
    for (const w of ws) w();
  }

  function setState(rec: TaskRecord, state: TaskState, message?: string): void {
    rec.state = state;
    rec.statusMessage = message === undefined ? undefined : agentMessage(message, rec.id, rec.contextId);
    rec.timestamp = new Date().toISOString();
    const interrupt = state === 'input-required';
    emit(
      rec,
      {
        payload: {
          $case: 'statusUpdate',
          value: {
            taskId: rec.id,
            contextId: rec.contextId,
            status: { state: toCoreState(state), message: rec.statusMessage, timestamp: rec.timestamp },
            metadata: undefined,
          },
        },
      },
      isTerminal(state) || interrupt,
      !(isTerminal(state) || interrupt),
    );
    notify(rec);
  }

  function emitArtifact(rec: TaskRecord, a: Artifact, append: boolean, lastChunk: boolean, droppable = true): void {
    emit(
      rec,
      {
        payload: {
          $case: 'artifactUpdate',
          value: { taskId: rec.id, contextId: rec.contextId, artifact: a, append, lastChunk, metadata: undefined },
        },
      },
      false,
      droppable,
    );
  }

  function setResponse(rec: TaskRecord, text: string): Artifact {
    rec.responseText = text;
    const a = mkArtifact('response', [textPart(text)], { name: 'response' });
    if (rec.responseIdx < 0) {
      rec.responseIdx = rec.artifacts.length;
      rec.artifacts.push(a);
    } else rec.artifacts[rec.responseIdx] = a;
    return a;
  }

  /** The one place a task reaches a final state: emits exactly one final status. */
  function finalize(rec: TaskRecord, state: TaskState, text?: string): void {
    if (rec.final) return;
    rec.final = true;
    if (rec.input) {
      clearTimeout(rec.input.timer);
      const inp = rec.input;
      rec.input = undefined;
      inp.reject(new TaskCanceledError(rec.id));
    }
    if (state === 'completed') {
      const full = text ?? (rec.responseIdx >= 0 ? rec.responseText : undefined);
      if (full !== undefined) {
        const a = setResponse(rec, full);
        emitArtifact(rec, a, false, true, false);
      }
    }
    setState(rec, state, text);
    rec.waiters.clear();
    evict();
  }

  function evict(): void {
    if (tasks.size <= maxStored) return;
    for (const [id, r] of tasks) {
      if (tasks.size <= maxStored) break;
      if (r.final && r.subs.size === 0) tasks.delete(id);
    }
  }

  function waitFor(rec: TaskRecord, pred: () => boolean): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve) => {
      const w = () => {
        if (pred()) {
          rec.waiters.delete(w);
          resolve();
        }
      };
      rec.waiters.add(w);
    });
  }

  function checkIdle(): void {
    if (running || pending.length > 0) return;
    const ws = idleWaiters;
    idleWaiters = [];
    for (const w of ws) w();
  }

  // ---- acceptance and the run loop ------------------------------------------------------------

  function canAccept(): boolean {
    if (closing) return false;
    if (opts.acceptance === 'none') return false;
    if (opts.acceptance === 'single') return !singleUsed;
    return pending.length < queueDepth || (!running && pending.length === 0);
  }

  /** Queue or reject a freshly created (submitted) task. */
  function admit(rec: TaskRecord): void {
    if (closing) {
      finalize(rec, 'rejected', 'server is shutting down');
      return;
    }
    if (opts.acceptance === 'single') {
      if (singleUsed) {
        finalize(rec, 'rejected', 'this capsule runs a single task (lifecycle.task_acceptance: single) and has one');
        return;
      }
      singleUsed = true;
    } else if (running && pending.length >= queueDepth) {
      finalize(
        rec,
        'rejected',
        `queue full: ${pending.length} task(s) waiting behind the running one (lifecycle.queue_depth: ${queueDepth})`,
      );
      return;
    }
    pending.push(rec);
    pump();
  }

  function pump(): void {
    while (!running && pending.length > 0) {
      const rec = pending.shift()!;
      if (rec.final) continue; // canceled while queued
      running = rec;
      void run(rec);
    }
    checkIdle();
  }

  async function run(rec: TaskRecord): Promise<void> {
    setState(rec, 'working');
    const ctx: TaskContext = {
      taskId: rec.id,
      contextId: rec.contextId,
      messageId: rec.messageId,
      text: rec.text,
      origin: rec.origin,
      trust: rec.trust,
      ...(rec.traceparent ? { traceparent: rec.traceparent } : {}),
      signal: rec.abort.signal,
    };
    const ev: TaskEvents = {
      status(message?: string) {
        if (rec.final || rec.state === 'input-required') return;
        setState(rec, 'working', message);
      },
      artifact(a: ArtifactInput) {
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
        emitArtifact(rec, art, false, true);
      },
      textChunk(s: string) {
        if (rec.final || s === '') return;
        const first = rec.responseIdx < 0;
        setResponse(rec, rec.responseText + s);
        emitArtifact(rec, mkArtifact('response', [textPart(s)], { name: 'response' }), !first, false);
      },
      thinkingChunk(s: string) {
        if (rec.final || s === '') return;
        const first = !rec.thinkingStarted;
        rec.thinkingStarted = true;
        emitArtifact(
          rec,
          mkArtifact('thinking', [textPart(s)], { name: 'thinking', metadata: { murmur: { kind: 'thinking' } } }),
          !first,
          false,
        );
      },
      requestInput(prompt: string): Promise<string> {
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
          if (inputTimeoutSecs !== undefined && inputTimeoutSecs > 0) {
            input.timer = setTimeout(() => {
              if (rec.input !== input) return;
              rec.input = undefined;
              const err = new InputTimeoutError(rec.id, inputTimeoutSecs);
              reject(err);
              rec.abort.abort(err);
              finalize(rec, 'failed', err.message);
            }, inputTimeoutSecs * 1000);
            input.timer.unref?.();
          }
          rec.input = input;
          setState(rec, 'input-required', prompt);
        });
      },
    };
    let outcome: TaskOutcome;
    try {
      outcome = await opts.executor(ctx, ev);
      if (!outcome || !['completed', 'failed', 'canceled', 'rejected'].includes(outcome.state)) {
        outcome = { state: 'failed', reason: `executor returned an invalid outcome: ${JSON.stringify(outcome)}` };
      }
    } catch (e) {
      outcome = { state: 'failed', reason: errMessage(e) };
    }
    if (!rec.final) {
      finalize(rec, outcome.state, outcome.state === 'completed' ? outcome.text : (outcome.reason ?? outcome.text));
    }
    running = undefined;
    if (opts.acceptance === 'single') resolveDone();
    pump();
  }

  // ---- request handling -----------------------------------------------------------------------

  function headersOf(context: ServerCallContext): Record<string, string | string[] | undefined> {
    const h = context.state.get('headers');
    return (h && typeof h === 'object' ? h : {}) as Record<string, string | string[] | undefined>;
  }

  function validateMessage(m: Message | undefined): Message {
    if (!m) throw invalidParams("params.message is required: {messageId, role: 'user', parts: [{text}]}");
    if (!m.messageId) throw invalidParams('message.messageId is required (a sender-generated unique id, e.g. a uuid)');
    if (m.role !== Role.ROLE_USER) throw invalidParams("message.role must be 'user' (1.0: 'ROLE_USER')");
    if (!Array.isArray(m.parts) || m.parts.length === 0) throw invalidParams('message.parts must hold at least one part');
    if (messageText(m) === '') throw invalidParams('message has no text or data part with content');
    return m;
  }

  function getRec(id: string): TaskRecord {
    if (!id) throw invalidParams("params.id (the task id) is required");
    const rec = tasks.get(id);
    if (!rec) throw taskNotFound(id);
    return rec;
  }

  /**
   * Resolve a message: either a reply to an input-required task (returns the task, reply
   * delivered) or a new task (created `submitted`, not yet admitted).
   */
  function intake(params: SendMessageRequest, context: ServerCallContext): { rec: TaskRecord; isNew: boolean; deliver?: () => void } {
    const m = validateMessage(params.message);
    if (m.taskId) {
      const rec = tasks.get(m.taskId);
      if (!rec) throw taskNotFound(m.taskId);
      if (m.contextId && m.contextId !== rec.contextId) {
        throw invalidParams(
          `message.contextId '${m.contextId}' does not match task ${rec.id}'s contextId '${rec.contextId}'`,
        );
      }
      if (rec.final) {
        throw unsupported(
          `task ${rec.id} is ${rec.state}; terminal tasks are never restarted — send a new message without taskId (same contextId) to start a new task`,
        );
      }
      if (rec.state !== 'input-required' || !rec.input) {
        throw unsupported(`task ${rec.id} is ${rec.state}; it accepts a message only while input-required`);
      }
      const deliver = () => {
        const inp = rec.input;
        if (!inp || rec.final) return;
        rec.input = undefined;
        clearTimeout(inp.timer);
        rec.history.push(m);
        setState(rec, 'working');
        inp.resolve(messageText(m));
      };
      return { rec, isNew: false, deliver };
    }
    if (opts.acceptance === 'none') {
      throw unsupported('this capsule does not accept A2A tasks (lifecycle.task_acceptance: none)');
    }
    const { origin, trust } = parseOriginTrust(headersOf(context));
    const h = headersOf(context);
    const rec: TaskRecord = {
      id: randomUUID(),
      contextId: m.contextId || randomUUID(),
      messageId: m.messageId,
      text: messageText(m),
      origin,
      trust,
      traceparent: validTraceparent(h['traceparent']),
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
      artifactSeq: 0,
    };
    rec.history.push({ ...m, taskId: rec.id, contextId: rec.contextId });
    tasks.set(rec.id, rec);
    return { rec, isNew: true };
  }

  function subscribe(rec: TaskRecord, context: ServerCallContext): Subscriber {
    const res = resOf.get(context.state.get('headers') as object);
    const sub = new Subscriber(rec, res, maxQueued, maxBuffered, () => laggedDrops++, heartbeatMs);
    rec.subs.add(sub);
    return sub;
  }

  async function* drain(sub: Subscriber): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      for (;;) {
        const item = sub.queue.shift();
        if (item) {
          yield item.resp;
          if (item.ends) return;
          continue;
        }
        if (sub.closed) return;
        await sub.next();
      }
    } finally {
      sub.dispose();
      sub.rec.subs.delete(sub);
    }
  }

  function cancel(rec: TaskRecord): void {
    if (rec.final) {
      throw new JsonRpcTaskNotCancelableError({
        message: `task ${rec.id} is already ${rec.state} and cannot be canceled`,
        metadata: { taskId: rec.id },
      });
    }
    const err = new TaskCanceledError(rec.id);
    const idx = pending.indexOf(rec);
    if (idx >= 0) pending.splice(idx, 1);
    rec.abort.abort(err);
    finalize(rec, 'canceled', 'canceled by client (tasks/cancel)');
    checkIdle();
  }

  const handler: A2ARequestHandler = {
    async getAgentCard() {
      return coreCard;
    },
    async getAuthenticatedExtendedAgentCard() {
      throw new JsonRpcExtendedAgentCardNotConfiguredError({ message: 'this capsule has no extended agent card' });
    },
    async sendMessage(params, context) {
      const { rec, isNew, deliver } = intake(params, context);
      if (isNew) admit(rec);
      else deliver!();
      if (params.configuration?.returnImmediately) return snapshot(rec, params.configuration.historyLength);
      await waitFor(rec, () => rec.final || rec.state === 'input-required');
      return snapshot(rec, params.configuration?.historyLength);
    },
    sendMessageStream(params, context) {
      // Validation and intake run synchronously, before the generator exists, so the SDK answers
      // a refusal as a plain JSON-RPC error (it logs errors thrown from inside a stream).
      const { rec, isNew, deliver } = intake(params, context);
      const sub = subscribe(rec, context);
      return (async function* () {
        const it = drain(sub);
        try {
          yield { payload: { $case: 'task', value: snapshot(rec, params.configuration?.historyLength) } } as StreamResponse;
          if (isNew) admit(rec);
          else deliver!();
          yield* it;
        } finally {
          await it.return(undefined);
        }
      })();
    },
    async getTask(params: GetTaskRequest) {
      return snapshot(getRec(params.id), params.historyLength);
    },
    async cancelTask(params: CancelTaskRequest) {
      const rec = getRec(params.id);
      cancel(rec);
      return snapshot(rec);
    },
    resubscribe(params: SubscribeToTaskRequest, context) {
      const rec = getRec(params.id);
      if (rec.final) throw unsupported(`task ${rec.id} is already ${rec.state}; use tasks/get for its result`);
      const sub = subscribe(rec, context);
      return (async function* () {
        const it = drain(sub);
        try {
          yield { payload: { $case: 'task', value: snapshot(rec) } } as StreamResponse;
          yield* it;
        } finally {
          await it.return(undefined);
        }
      })();
    },
    async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
      let list = [...tasks.values()].reverse();
      if (params.contextId) list = list.filter((r) => r.contextId === params.contextId);
      if (params.status) {
        list = list.filter((r) => toCoreState(r.state) === params.status);
      }
      const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
      const start = params.pageToken ? Number.parseInt(params.pageToken, 10) || 0 : 0;
      const page = list.slice(start, start + pageSize);
      return {
        tasks: page.map((r) => {
          const t = snapshot(r, params.historyLength ?? 0);
          if (!params.includeArtifacts) t.artifacts = [];
          return t;
        }),
        nextPageToken: start + pageSize < list.length ? String(start + pageSize) : '',
        pageSize,
        totalSize: list.length,
      };
    },
    async createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
      throw new JsonRpcPushNotificationNotSupportedError({ message: 'push notifications are not supported; use message/stream or tasks/get' });
    },
    async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
      throw new JsonRpcPushNotificationNotSupportedError({ message: 'push notifications are not supported' });
    },
    async listTaskPushNotificationConfigs(): Promise<ListTaskPushNotificationConfigsResponse> {
      throw new JsonRpcPushNotificationNotSupportedError({ message: 'push notifications are not supported' });
    },
    async deleteTaskPushNotificationConfig(): Promise<void> {
      throw new JsonRpcPushNotificationNotSupportedError({ message: 'push notifications are not supported' });
    },
  };

  // ---- HTTP ------------------------------------------------------------------------------------

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    const onErr = (e: NodeJS.ErrnoException) =>
      reject(
        new MurError('E-A2A-001', `cannot listen on ${host}:${opts.port ?? 0}: ${e.code ?? e.message}`, {
          hint: 'pick a free port (network.internal_port) or stop the process holding it',
          cause: e,
        }),
      );
    server.once('error', onErr);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', onErr);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = opts.publicUrl ?? `http://${urlHost}:${port}/`;
  const card = buildCardJson(opts.card, url);
  const cardBody = JSON.stringify(card);
  const coreCard = buildCoreCard(opts.card, url);

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', (_req, res) => {
    const ready = canAccept();
    res.status(ready ? 200 : 503).json({ ready, acceptance: opts.acceptance });
  });
  app.get(['/.well-known/agent-card.json'], (_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'max-age=60');
    res.end(cardBody);
  });
  app.post('/', frontDoor(maxBody, resOf));
  app.use(
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }),
  );
  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'not found: POST / for JSON-RPC, GET /.well-known/agent-card.json for the card' });
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(500).json(rpcErrorBody(null, -32603, `internal error: ${errMessage(err)}`));
    void req;
  });

  return {
    url,
    port,
    card,
    done,
    idle() {
      if (!running && pending.length === 0) return Promise.resolve();
      return new Promise((r) => idleWaiters.push(r));
    },
    acceptsMore() {
      return !closing && opts.acceptance !== 'none' && !(opts.acceptance === 'single' && singleUsed);
    },
    stats() {
      let subscribers = 0;
      for (const r of tasks.values()) subscribers += r.subs.size;
      return { tasks: tasks.size, running: running ? 1 : 0, pending: pending.length, subscribers, laggedDrops };
    },
    async close() {
      if (closing) return;
      closing = true;
      for (const rec of tasks.values()) {
        if (!rec.final) {
          rec.abort.abort(new TaskCanceledError(rec.id));
          finalize(rec, 'canceled', 'server is shutting down');
        }
      }
      pending.length = 0;
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Front door: body limit, JSON parse, envelope, version, method — before the SDK sees anything.

function rpcErrorBody(id: unknown, code: number, message: string): Record<string, unknown> {
  const okId = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
  return { jsonrpc: '2.0', id: okId, error: { code, message } };
}

const M03 = 'message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe';
const M10 = 'SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask';

function frontDoor(maxBody: number, resOf: WeakMap<object, http.ServerResponse>) {
  return (req: Request, res: Response, next: NextFunction) => {
    const reply = (status: number, body: Record<string, unknown>, close = false) => {
      if (res.headersSent) return;
      if (close) res.setHeader('Connection', 'close');
      res.status(status).json(body);
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBody) {
      reply(413, rpcErrorBody(null, -32600, `request body of ${declared} bytes exceeds the ${maxBody}-byte limit`), true);
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let aborted = false;
    req.on('data', (c: Buffer) => {
      if (aborted) return;
      size += c.length;
      if (size > maxBody) {
        aborted = true;
        chunks.length = 0;
        reply(413, rpcErrorBody(null, -32600, `request body exceeds the ${maxBody}-byte limit`), true);
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('error', () => {
      aborted = true;
    });
    req.on('end', () => {
      if (aborted) return;
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        if (raw.trim() === '') throw new Error('empty request body');
        body = JSON.parse(raw);
      } catch (e) {
        reply(200, rpcErrorBody(null, -32700, `parse error: request body is not valid JSON (${errMessage(e)})`));
        return;
      }
      if (tooDeep(body, MAX_JSON_DEPTH)) {
        reply(200, rpcErrorBody(null, -32600, `invalid request: JSON nests deeper than ${MAX_JSON_DEPTH} levels`));
        return;
      }
      const problem = checkEnvelope(body, req);
      if (problem) {
        reply(200, rpcErrorBody(problem.id, problem.code, problem.message));
        return;
      }
      req.body = body;
      resOf.set(req.headers, res);
      next();
    });
  };
}

const MAX_JSON_DEPTH = 64;

/** Whether a parsed JSON value nests deeper than `max` (iterative: no recursion on hostile input). */
function tooDeep(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d >= max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
    }
  }
  return false;
}

function checkEnvelope(
  body: unknown,
  req: Request,
): { id: unknown; code: number; message: string } | undefined {
  if (Array.isArray(body)) {
    return { id: null, code: -32600, message: 'invalid request: batch requests are not supported; send one JSON-RPC object per POST' };
  }
  if (typeof body !== 'object' || body === null) {
    return { id: null, code: -32600, message: 'invalid request: the body must be a JSON-RPC 2.0 request object' };
  }
  const b = body as Record<string, unknown>;
  const id = b['id'];
  if ('id' in b && !(typeof id === 'string' || id === null || (typeof id === 'number' && Number.isInteger(id)))) {
    return { id: null, code: -32600, message: "invalid request: 'id' must be a string, an integer or null" };
  }
  if (b['jsonrpc'] !== '2.0') {
    return { id, code: -32600, message: `invalid request: 'jsonrpc' must be "2.0"` };
  }
  const method = b['method'];
  if (typeof method !== 'string' || method === '') {
    return { id, code: -32600, message: "invalid request: 'method' must be a non-empty string" };
  }
  const rawVersion = req.header(VERSION_HEADER);
  const version = normaliseVersion(rawVersion);
  if (!version) {
    return { id, code: -32009, message: `A2A-Version '${rawVersion}' is not supported; this server speaks 0.3 (no header) and 1.0` };
  }
  if (rawVersion !== undefined) req.headers['a2a-version'] = version;
  const table = version === '1.0' ? METHODS_1_0 : METHODS_0_3;
  if (!table.has(method)) {
    let message = `method not found: '${method}'`;
    if (version === '0.3' && METHODS_1_0.has(method)) {
      message += ` is an A2A 1.0 name; send the header 'A2A-Version: 1.0' (without it this server speaks A2A 0.3: ${M03})`;
    } else if (version === '1.0' && METHODS_0_3.has(method)) {
      message += ` is an A2A 0.3 name; under 'A2A-Version: 1.0' use ${M10}`;
    } else {
      message += `; A2A ${version} methods here: ${version === '1.0' ? M10 : M03}`;
    }
    return { id, code: -32601, message };
  }
  const params = b['params'];
  const noParams = method === 'agent/getAuthenticatedExtendedCard' || method === 'GetExtendedAgentCard';
  if (!noParams && (typeof params !== 'object' || params === null || Array.isArray(params))) {
    return { id, code: -32602, message: `invalid params: '${method}' needs 'params' to be an object` };
  }
  if (
    (method === 'message/send' || method === 'message/stream' || method === 'SendMessage' || method === 'SendStreamingMessage') &&
    (typeof (params as Record<string, unknown>)['message'] !== 'object' || (params as Record<string, unknown>)['message'] === null)
  ) {
    return { id, code: -32602, message: `invalid params: '${method}' needs params.message (an A2A Message object)` };
  }
  const idParam = (params as Record<string, unknown> | undefined)?.['id'];
  if (
    ['tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'GetTask', 'CancelTask', 'SubscribeToTask'].includes(method) &&
    (typeof idParam !== 'string' || idParam === '')
  ) {
    return { id, code: -32602, message: `invalid params: '${method}' needs params.id (the task id, a string)` };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Agent card

function skillJson(s: SkillInput) {
  return {
    id: s.id,
    name: s.name ?? s.id,
    description: s.description ?? s.name ?? s.id,
    tags: s.tags ?? [],
    ...(s.examples ? { examples: s.examples } : {}),
  };
}

/** The served card: A2A 1.0 fields plus the 0.3 ones (`url`, `protocolVersion`, `preferredTransport`). */
export function buildCardJson(c: AgentCardInput, url: string): Record<string, unknown> {
  return {
    name: c.name,
    description: c.description,
    version: c.version,
    // A2A 1.0: first entry is preferred.
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    // A2A 0.3
    protocolVersion: '0.3.0',
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: (c.skills ?? []).map(skillJson),
  };
}

function buildCoreCard(c: AgentCardInput, url: string): AgentCard {
  return {
    name: c.name,
    description: c.description,
    version: c.version,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: (c.skills ?? []).map((s) => {
      const j = skillJson(s);
      return {
        ...j,
        examples: s.examples ?? [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      };
    }),
    signatures: [],
  };
}
