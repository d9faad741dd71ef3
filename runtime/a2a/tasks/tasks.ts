/**
 * The task state machine: task records, acceptance (none/single/queue), the run loop around the
 * executor, request-input, cancel, exactly one final status, and the subscribers of each task.
 * No HTTP and no wire format here: the request handler (handler.ts) validates requests and maps
 * this machine to the SDK's `A2ARequestHandler`; the transports are the SDK's.
 *
 * Storage seam: every state change is saved to the injected `TaskStore` (the SDK's interface, so
 * its `InMemoryTaskStore` or `DatabaseTaskStore` plug in unchanged), under the context of the
 * caller that created the task, so the store's owner scoping keeps each caller to its own tasks.
 * Live records (running, queued, waiting for input, or recently finished) stay in memory and are
 * authoritative while they exist; the store answers for everything else and for ListTasks.
 */
import { randomUUID } from 'node:crypto';
import type { Artifact, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { ServerCallContext, resolveUserScope, type TaskStore } from '@a2a-js/sdk/server';
import { TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { MurError } from '../../errors.ts';
import { DEFAULT_INPUT_TIMEOUT_SECS } from '../../manifest/schema.ts';
import type { ConversationOwner } from '../../inference/conversation-store.ts';
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
} from '../core/executor.ts';
import { redactedEvents, redactedOutcome } from './redaction.ts';
import { agentMessage, artifact as mkArtifact, dataPart, messageText, textPart, toCoreState } from '../core/wire.ts';
import { Subscriber, type StreamSink, type SubscriberBounds } from './stream.ts';
import { DEFAULT_MAX_LIVE_BYTES, evictions, retainedBytes } from './live-tasks.ts';

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
  /** A store save failed (the task goes on in memory). Default: one line on stderr. */
  onStoreError?: (taskId: string, e: unknown) => void;
}

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
}

/** Owner scope of a call, the way the SDK's in-memory and database stores scope it. */
export function ownerKey(ctx: ServerCallContext): string {
  return `${ctx.tenant ?? ''}\u0000${resolveUserScope(ctx)}`;
}

/** The same owner scope as the conversation store keeps it: the SDK task table's tenant and owner. */
export function callerOwner(ctx: ServerCallContext): ConversationOwner {
  return { tenant: ctx.tenant ?? '', user: resolveUserScope(ctx) };
}

function errMessage(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

export class TaskMachine {
  private readonly live = new Map<string, TaskRecord>();
  private readonly pending: TaskRecord[] = [];
  private running: TaskRecord | undefined;
  private singleUsed = false;
  private closing = false;
  /** Set by drain(): no new task is taken, the accepted ones run to their end. */
  private draining = false;
  private laggedDrops = 0;
  /** Finished tasks in `live` and the content they keep (retainedBytes), kept as they change. */
  private readonly finished = { tasks: 0, bytes: 0 };
  private idleWaiters: Array<() => void> = [];
  /** Listeners told after every task event and subscriber change (tests wait on these, not on timers). */
  private readonly changeListeners = new Set<() => void>();
  private readonly saves = new Set<Promise<void>>();
  private resolveDone!: () => void;
  /** `single`: resolves when the one task has ended and its executor returned. */
  readonly done = new Promise<void>((r) => (this.resolveDone = r));

  constructor(private readonly o: TaskMachineOptions) {
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

  get acceptance(): TaskAcceptance {
    return this.o.acceptance;
  }

  // ---- reading ---------------------------------------------------------------------------------

  /** The live record of a task the caller owns; undefined when unknown, not live, or another's. */
  find(id: string, caller: ServerCallContext): TaskRecord | undefined {
    const rec = this.live.get(id);
    return rec && rec.owner === ownerKey(caller) ? rec : undefined;
  }

  /** The live record of task `id` if its owner scope key is `owner` (a call relayed from another replica). */
  findOwned(id: string, owner: string): TaskRecord | undefined {
    const rec = this.live.get(id);
    return rec && rec.owner === owner ? rec : undefined;
  }

  /** Whether a task with this id is live at all (whoever owns it). */
  isLive(id: string): boolean {
    return this.live.has(id);
  }

  /** A task the caller owns, live or from the store (after any pending saves landed). */
  async load(id: string, caller: ServerCallContext): Promise<Task | undefined> {
    const rec = this.find(id, caller);
    if (rec) return this.snapshot(rec);
    await this.flush();
    return this.o.store.load(id, caller);
  }

  /** Waits until every save issued so far has reached the store. */
  async flush(): Promise<void> {
    while (this.saves.size > 0) await Promise.all([...this.saves]);
  }

  get store(): TaskStore {
    return this.o.store;
  }

  snapshot(rec: TaskRecord, historyLength?: number): Task {
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

  // ---- acceptance and intake -------------------------------------------------------------------

  /** Whether a new task would be queued now (readiness: false for none, a used single, a full queue, closing). */
  canAccept(): boolean {
    if (this.closing || this.draining || this.o.acceptance === 'none') return false;
    if (this.o.acceptance === 'single') return !this.singleUsed;
    return this.pending.length < this.o.queueDepth || (!this.running && this.pending.length === 0);
  }

  /** Whether the machine will ever take another task (a full queue is transient and does not count). */
  acceptsMore(): boolean {
    return !this.closing && !this.draining && this.o.acceptance !== 'none' && !(this.o.acceptance === 'single' && this.singleUsed);
  }

  /** Create a task in `submitted` (not yet admitted: subscribe first, then `admit`). */
  create(t: NewTask): TaskRecord {
    if (this.o.acceptance === 'none') {
      throw new UnsupportedOperationError('this capsule does not accept A2A tasks (lifecycle.task_acceptance: none)');
    }
    const m = t.message;
    const rec: TaskRecord = {
      id: randomUUID(),
      contextId: m.contextId || randomUUID(),
      messageId: m.messageId,
      text: messageText(m),
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
    };
    rec.history.push({ ...m, taskId: rec.id, contextId: rec.contextId });
    this.live.set(rec.id, rec);
    this.save(rec);
    return rec;
  }

  /** Queue or reject a freshly created (submitted) task. */
  admit(rec: TaskRecord): void {
    if (this.closing || this.draining) {
      this.finalize(rec, 'rejected', 'server is shutting down (draining after SIGTERM): retry on another replica');
      return;
    }
    if (this.o.acceptance === 'single') {
      if (this.singleUsed) {
        this.finalize(rec, 'rejected', 'this capsule runs a single task (lifecycle.task_acceptance: single) and has one');
        return;
      }
      this.singleUsed = true;
    } else if (this.running && this.pending.length >= this.o.queueDepth) {
      this.finalize(
        rec,
        'rejected',
        `queue full: ${this.pending.length} task(s) waiting behind the running one (lifecycle.queue_depth: ${this.o.queueDepth})`,
      );
      return;
    }
    this.pending.push(rec);
    this.pump();
  }

  /**
   * Check that `rec` can take a reply now (it is waiting in request-input); returns the function
   * that delivers it. Throws the A2A error for a task that is final or not waiting.
   */
  replyTo(rec: TaskRecord, m: Message): () => void {
    if (rec.final) {
      throw new UnsupportedOperationError(
        `task ${rec.id} is ${rec.state}; terminal tasks are never restarted — send a new message without taskId (same contextId) to start a new task`,
      );
    }
    if (rec.state !== 'input-required' || !rec.input) {
      throw new UnsupportedOperationError(`task ${rec.id} is ${rec.state}; it accepts a message only while input-required`);
    }
    return () => {
      const inp = rec.input;
      if (!inp || rec.final) return;
      rec.input = undefined;
      clearTimeout(inp.timer);
      rec.history.push(m);
      this.setState(rec, 'working');
      inp.resolve(messageText(m));
    };
  }

  cancel(rec: TaskRecord): void {
    if (rec.final) {
      throw new TaskNotCancelableError({
        message: `task ${rec.id} is already ${rec.state} and cannot be canceled`,
        metadata: { taskId: rec.id },
      });
    }
    const idx = this.pending.indexOf(rec);
    if (idx >= 0) this.pending.splice(idx, 1);
    rec.abort.abort(new TaskCanceledError(rec.id));
    this.finalize(rec, 'canceled', 'canceled by client (tasks/cancel)');
    this.checkIdle();
  }

  // ---- subscribers and waiting -----------------------------------------------------------------

  subscribe(rec: TaskRecord, sink: StreamSink | undefined): Subscriber {
    const sub = new Subscriber(sink, this.o.stream, (n) => this.laggedNotice(rec, n), () => this.laggedDrops++);
    rec.subs.add(sub);
    this.changed();
    return sub;
  }

  /** The events of `sub` until its stream ends; the subscriber is removed afterwards. */
  events(rec: TaskRecord, sub: Subscriber): AsyncGenerator<StreamResponse, void, undefined> {
    return sub.drain(() => {
      rec.subs.delete(sub);
      this.changed();
    });
  }

  /**
   * `listener` runs after every task event (status, artifact) and every subscriber added or
   * removed, so a caller can wait for a state instead of polling. Returns the unsubscribe.
   */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private changed(): void {
    for (const l of [...this.changeListeners]) l();
  }

  waitFor(rec: TaskRecord, pred: () => boolean): Promise<void> {
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

  /** Resolves when no task is running or waiting. */
  idle(): Promise<void> {
    if (!this.running && this.pending.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  stats(): { tasks: number; running: number; pending: number; subscribers: number; laggedDrops: number } {
    let subscribers = 0;
    for (const r of this.live.values()) subscribers += r.subs.size;
    return { tasks: this.live.size, running: this.running ? 1 : 0, pending: this.pending.length, subscribers, laggedDrops: this.laggedDrops };
  }

  /** Whether drain() has begun. */
  isDraining(): boolean {
    return this.draining;
  }

  /** Tasks waiting in input-required (the session is blocked on a caller's answer). */
  waitingForInput(): number {
    let n = 0;
    for (const r of this.live.values()) if (!r.final && r.state === 'input-required') n++;
    return n;
  }

  /**
   * Graceful drain: take no new task, let the running and queued ones finish for at most
   * `budgetMs`, then fail whatever is still unfinished with a reason saying so (stored, and every
   * open stream gets that final status). Resolves with the number of tasks failed that way.
   */
  async drain(budgetMs: number): Promise<number> {
    this.draining = true;
    let timer: NodeJS.Timeout | undefined;
    const out = await Promise.race([
      this.idle().then(() => 'idle' as const),
      new Promise<'budget'>((r) => (timer = setTimeout(() => r('budget'), budgetMs))),
    ]);
    clearTimeout(timer);
    let failed = 0;
    if (out === 'budget') {
      const reason = `the runtime was stopping (SIGTERM) and the task was still unfinished when the ${Math.round(budgetMs / 1000)} s drain budget ran out`;
      for (const rec of this.live.values()) {
        if (rec.final) continue;
        rec.abort.abort(new TaskCanceledError(rec.id));
        this.finalize(rec, 'failed', reason);
        failed++;
      }
      this.pending.length = 0;
    }
    await this.flush();
    return failed;
  }

  /** Cancel every unfinished task ('server is shutting down') and take no more; waits for their saves. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const rec of this.live.values()) {
      if (!rec.final) {
        rec.abort.abort(new TaskCanceledError(rec.id));
        this.finalize(rec, 'canceled', 'server is shutting down');
      }
    }
    this.pending.length = 0;
    await this.flush();
  }

  // ---- internals -------------------------------------------------------------------------------

  private save(rec: TaskRecord): void {
    const task = this.snapshot(rec);
    const p = rec.saving
      .then(() => this.o.store.save(task, rec.ownerContext))
      .catch((e: unknown) => {
        if (this.o.onStoreError) this.o.onStoreError(rec.id, e);
        else process.stderr.write(`mur: E-A2A-014 task store: saving task ${rec.id} failed: ${errMessage(e)}\n`);
      });
    rec.saving = p;
    this.saves.add(p);
    void p.finally(() => this.saves.delete(p));
  }

  private emit(rec: TaskRecord, resp: StreamResponse, ends: boolean, droppable: boolean): void {
    for (const s of rec.subs) s.push({ resp, ends }, droppable);
    this.o.onEvent?.(rec, resp);
    this.changed();
  }

  private setState(rec: TaskRecord, state: TaskState, message?: string): void {
    rec.state = state;
    rec.statusMessage = message === undefined ? undefined : agentMessage(message, rec.id, rec.contextId);
    rec.timestamp = new Date().toISOString();
    const interrupt = state === 'input-required';
    this.save(rec);
    this.emit(
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
    for (const w of [...rec.waiters]) w();
  }

  private emitArtifact(rec: TaskRecord, a: Artifact, append: boolean, lastChunk: boolean, droppable = true): void {
    this.emit(
      rec,
      { payload: { $case: 'artifactUpdate', value: { taskId: rec.id, contextId: rec.contextId, artifact: a, append, lastChunk, metadata: undefined } } },
      false,
      droppable,
    );
  }

  private setResponse(rec: TaskRecord, text: string): Artifact {
    rec.responseText = text;
    const a = mkArtifact('response', [textPart(text)], { name: 'response' });
    if (rec.responseIdx < 0) {
      rec.responseIdx = rec.artifacts.length;
      rec.artifacts.push(a);
    } else rec.artifacts[rec.responseIdx] = a;
    return a;
  }

  /** The one place a task reaches a final state: emits exactly one final status. */
  private finalize(rec: TaskRecord, state: TaskState, text?: string): void {
    if (rec.final) return;
    rec.final = true;
    // A rejected task never ran: it keeps no body (the message text and its parts), only its status.
    if (state === 'rejected') {
      rec.text = '';
      rec.history = [];
    }
    if (rec.input) {
      clearTimeout(rec.input.timer);
      const inp = rec.input;
      rec.input = undefined;
      inp.reject(new TaskCanceledError(rec.id));
    }
    if (state === 'completed') {
      const full = text ?? (rec.responseIdx >= 0 ? rec.responseText : undefined);
      if (full !== undefined) this.emitArtifact(rec, this.setResponse(rec, full), false, true, false);
    }
    this.setState(rec, state, text);
    rec.retained = retainedBytes(rec);
    this.finished.tasks++;
    this.finished.bytes += rec.retained;
    rec.waiters.clear();
    this.evict();
  }

  /** Drops finished tasks past the live bounds (live-tasks.ts); the running totals keep the common case free of a scan. */
  private evict(): void {
    const bounds = { maxTasks: this.o.maxLiveTasks, maxBytes: this.o.maxLiveBytes ?? DEFAULT_MAX_LIVE_BYTES };
    if (this.finished.tasks <= bounds.maxTasks && this.finished.bytes <= bounds.maxBytes) return;
    const entries = (function* (live) {
      for (const r of live.values()) yield { id: r.id, final: r.final, subscribers: r.subs.size, bytes: r.retained };
    })(this.live);
    for (const id of evictions(entries, bounds, this.finished)) {
      this.finished.tasks--;
      this.finished.bytes -= this.live.get(id)!.retained;
      this.live.delete(id);
    }
  }

  private checkIdle(): void {
    if (this.running || this.pending.length > 0) return;
    const ws = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of ws) w();
  }

  private pump(): void {
    while (!this.running && this.pending.length > 0) {
      const rec = this.pending.shift()!;
      if (rec.final) continue; // canceled while queued
      this.running = rec;
      void this.run(rec);
    }
    this.checkIdle();
  }

  private laggedNotice(rec: TaskRecord, dropped: number): StreamResponse {
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

  private events_(rec: TaskRecord): TaskEvents {
    const inputTimeoutSecs = this.o.inputTimeoutSecs ?? DEFAULT_INPUT_TIMEOUT_SECS;
    return {
      status: (message?: string) => {
        if (rec.final || rec.state === 'input-required') return;
        this.setState(rec, 'working', message);
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
        this.save(rec);
        this.emitArtifact(rec, art, false, true);
      },
      textChunk: (s: string) => {
        if (rec.final || s === '') return;
        const first = rec.responseIdx < 0;
        this.setResponse(rec, rec.responseText + s);
        this.emitArtifact(rec, mkArtifact('response', [textPart(s)], { name: 'response' }), !first, false);
      },
      thinkingChunk: (s: string) => {
        if (rec.final || s === '') return;
        const first = !rec.thinkingStarted;
        rec.thinkingStarted = true;
        this.emitArtifact(rec, mkArtifact('thinking', [textPart(s)], { name: 'thinking', metadata: { murmur: { kind: 'thinking' } } }), !first, false);
      },
      requestInput: (prompt: string): Promise<string> => {
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
          if (inputTimeoutSecs > 0) {
            input.timer = setTimeout(() => {
              if (rec.input !== input) return;
              rec.input = undefined;
              const err = new InputTimeoutError(rec.id, inputTimeoutSecs);
              reject(err);
              rec.abort.abort(err);
              this.finalize(rec, 'failed', err.message);
            }, inputTimeoutSecs * 1000);
            input.timer.unref?.();
          }
          rec.input = input;
          this.setState(rec, 'input-required', prompt);
        });
      },
    };
  }

  private async run(rec: TaskRecord): Promise<void> {
    this.setState(rec, 'working');
    const ctx: TaskContext = {
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
    let outcome: TaskOutcome;
    try {
      outcome = await this.o.executor(ctx, redactedEvents(this.events_(rec)));
      if (!outcome || !['completed', 'failed', 'canceled', 'rejected'].includes(outcome.state)) {
        outcome = { state: 'failed', reason: `executor returned an invalid outcome: ${JSON.stringify(outcome)}` };
      }
    } catch (e) {
      outcome = { state: 'failed', reason: errMessage(e) };
    }
    outcome = redactedOutcome(outcome);
    if (!rec.final) this.finalize(rec, outcome.state, outcome.state === 'completed' ? outcome.text : (outcome.reason ?? outcome.text));
    this.running = undefined;
    if (this.o.acceptance === 'single') this.resolveDone();
    this.pump();
  }
}

/** A task the caller cannot see looks exactly like one that does not exist (no existence leak). */
export function taskNotFound(id: string): Error {
  return new TaskNotFoundError({
    message: `task '${id}' not found (unknown id, or evicted after it ended)`,
    metadata: { taskId: id },
  });
}
