/**
 * The task state machine: task records, acceptance (none/single/queue), the run loop around the
 * executor, request-input, cancel, exactly one final status, and the subscribers of each task.
 * No HTTP and no wire format here: the request handler (handler/handler.ts) validates requests and maps
 * this machine to the SDK's `A2ARequestHandler`; the transports are the SDK's.
 *
 * Storage seam: every state change is saved to the injected `TaskStore` (the SDK's interface, so
 * its `InMemoryTaskStore` or `DatabaseTaskStore` plug in unchanged), under the context of the
 * caller that created the task, so the store's owner scoping keeps each caller to its own tasks.
 * Live records (running, queued, waiting for input, or recently finished) stay in memory and are
 * authoritative while they exist; the store answers for everything else and for ListTasks.
 * The record and the SDK shapes made from it are task-record.ts; the executor's reports,
 * executor-events.ts; the store writes, task-saves.ts; tasks that outlive their process while they
 * wait for input, resumable.ts.
 */
import type { Artifact, Message, StreamResponse, Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { DEFAULT_INPUT_TIMEOUT_SECS } from '../../manifest/schema.ts';
import { TaskCanceledError, isTerminal, type TaskContext, type TaskEvents, type TaskState } from '../core/executor.ts';
import { agentMessage, messageText } from '../core/wire.ts';
import { Subscriber, type StreamSink } from './stream.ts';
import { DEFAULT_MAX_LIVE_BYTES, evictions, retainedBytes } from './live-tasks.ts';
import {
  artifactEvent,
  laggedNotice,
  newRecord,
  ownerKey,
  setResponse,
  snapshot,
  statusEvent,
  taskContext,
  type NewTask,
  type TaskRecord,
} from './task-record.ts';
import { executorEvents, failedBy, runExecutor, type TaskOps } from './executor-events.ts';
import { TaskSaves } from './task-saves.ts';
import { adoptWaiting, dropResumePoint, keepResumePoint, keepsAwake, parked, resumedContext } from './resumable.ts';
import { checkOptions, type TaskAcceptance, type TaskMachineOptions } from './task-options.ts';

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
  /** The writes to the store (task-saves.ts). */
  private readonly saves: TaskSaves;
  /** The end of each unfinished task's activity (o.activity), held while keepsAwake(its state). */
  private readonly awake = new Map<TaskRecord, () => void>();
  private resolveDone!: () => void;
  /** `single`: resolves when the one task has ended and its executor returned. */
  readonly done = new Promise<void>((r) => (this.resolveDone = r));

  constructor(private readonly o: TaskMachineOptions) {
    checkOptions(o);
    this.saves = new TaskSaves(o.store, o.onStoreError, o.workingSaveDelayMs);
  }

  get acceptance(): TaskAcceptance {
    return this.o.acceptance;
  }

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
    await this.saves.flush();
  }

  get store(): TaskStore {
    return this.o.store;
  }

  snapshot(rec: TaskRecord, historyLength?: number): Task {
    return snapshot(rec, historyLength);
  }

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
    const rec = newRecord(t);
    this.live.set(rec.id, rec);
    this.track(rec);
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
      this.finalize(rec, 'rejected', `queue full: ${this.pending.length} task(s) waiting behind the running one (lifecycle.queue_depth: ${this.o.queueDepth})`);
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
    if (rec.detached) {
      throw new UnsupportedOperationError(
        `task ${rec.id} waits for input, and this replica is stopping (SIGTERM): send the reply again once the capsule is back`,
      );
    }
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
      rec.resumable = false;
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

  subscribe(rec: TaskRecord, sink: StreamSink | undefined): Subscriber {
    const sub = new Subscriber(
      sink,
      this.o.stream,
      (n) => laggedNotice(rec, n),
      () => this.laggedDrops++,
    );
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
   * open stream gets that final status). A task waiting for input with a stored resume point is
   * neither waited for nor failed: it is left `input-required` for the next process
   * (resumable.ts). Resolves with the number of tasks failed.
   */
  async drain(budgetMs: number): Promise<number> {
    this.draining = true;
    let timer: NodeJS.Timeout | undefined;
    let off: () => void = () => undefined;
    // Settled: idle, or the running task is parked (it waits for the next process) and none is queued.
    const settled = new Promise<'idle'>((resolve) => {
      void this.idle().then(() => resolve('idle'));
      const check = () => {
        if (this.running && parked(this.running) && !this.pending.some((r) => !r.final)) resolve('idle');
      };
      off = this.onChange(check);
      check();
    });
    const out = await Promise.race([settled, new Promise<'budget'>((r) => (timer = setTimeout(() => r('budget'), budgetMs)))]);
    clearTimeout(timer);
    off();
    let failed = 0;
    const reason = `the runtime was stopping (SIGTERM) and the task was still unfinished when the ${Math.round(budgetMs / 1000)} s drain budget ran out`;
    for (const rec of this.live.values()) {
      if (rec.final || rec.detached) continue;
      if (parked(rec)) this.detach(rec);
      else if (out === 'budget') {
        rec.abort.abort(new TaskCanceledError(rec.id));
        this.finalize(rec, 'failed', reason);
        failed++;
      }
    }
    if (out === 'budget') this.pending.length = 0;
    await this.flush();
    return failed;
  }

  /**
   * Leaves a parked task to the next process: this one never writes it again (its executor stays
   * blocked in request-input until the process exits), and a reply here is refused.
   */
  private detach(rec: TaskRecord): void {
    rec.detached = true;
    if (rec.input) clearTimeout(rec.input.timer);
    rec.input = undefined;
    this.track(rec);
  }

  /**
   * Adopts the tasks a stopped process left waiting for input with a resume point (resumable.ts):
   * before this one serves, and when a call names one whose replica is gone (replicas.ts).
   * Returns how many it adopted that wait for a reply.
   */
  async adoptWaiting(): Promise<number> {
    const store = this.o.resumePoints;
    if (!store) return 0;
    return adoptWaiting(store, this.o.store, this.o.inputTimeoutSecs ?? DEFAULT_INPUT_TIMEOUT_SECS, {
      finalize: this.finalize.bind(this),
      has: (id) => this.live.has(id),
      adopt: (rec) => {
        if (this.live.has(rec.id)) return false;
        this.live.set(rec.id, rec);
        if (this.o.acceptance === 'single') this.singleUsed = true;
        this.track(rec);
        return true;
      },
      enqueue: (rec) => {
        this.pending.push(rec);
        this.pump();
      },
    });
  }

  /**
   * Cancel every unfinished task ('server is shutting down') and take no more; waits for their
   * saves. A parked task (waiting for input, its resume point stored) is left to the next process.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const rec of this.live.values()) {
      if (parked(rec) && !rec.detached) this.detach(rec);
      else if (!rec.final && !rec.detached) {
        rec.abort.abort(new TaskCanceledError(rec.id));
        this.finalize(rec, 'canceled', 'server is shutting down');
      }
    }
    this.pending.length = 0;
    await this.flush();
  }

  private save(rec: TaskRecord): void {
    this.saves.save(rec);
  }

  private emit(rec: TaskRecord, resp: StreamResponse, ends: boolean, droppable: boolean): void {
    for (const s of rec.subs) s.push({ resp, ends }, droppable);
    this.o.onEvent?.(rec, resp);
    this.changed();
  }

  private setState(rec: TaskRecord, state: TaskState, message?: string): void {
    if (rec.detached) return;
    rec.state = state;
    rec.statusMessage = message === undefined ? undefined : agentMessage(message, rec.id, rec.contextId);
    rec.timestamp = new Date().toISOString();
    const interrupt = state === 'input-required';
    this.track(rec);
    this.saves[state === 'working' ? 'later' : 'save'](rec); // a working state may wait (task-saves.ts)
    this.emit(rec, statusEvent(rec), isTerminal(state) || interrupt, !(isTerminal(state) || interrupt));
    for (const w of [...rec.waiters]) w();
  }

  /** Begins or ends `rec`'s activity as its state keeps the capsule awake or not. */
  private track(rec: TaskRecord): void {
    if (!this.o.activity) return;
    const end = this.awake.get(rec);
    if (keepsAwake(rec) && !end) this.awake.set(rec, this.o.activity.begin());
    else if (!keepsAwake(rec) && end) {
      this.awake.delete(rec);
      end();
    }
  }

  private emitArtifact(rec: TaskRecord, a: Artifact, append: boolean, lastChunk: boolean, droppable = true): void {
    this.emit(rec, artifactEvent(rec, a, append, lastChunk), false, droppable);
  }

  /** The one place a task reaches a final state: emits exactly one final status. */
  private finalize(rec: TaskRecord, state: TaskState, text?: string): void {
    if (rec.final || rec.detached) return;
    rec.final = true;
    rec.resumable = false;
    if (this.o.resumePoints) dropResumePoint(this.o.resumePoints, rec);
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
      if (full !== undefined) this.emitArtifact(rec, setResponse(rec, full), false, true, false);
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

  /** The reports of `rec`'s executor, each a state change of this machine. */
  private reportsOf(rec: TaskRecord): TaskEvents {
    const ops: TaskOps = {
      setState: this.setState.bind(this),
      later: (r) => this.saves.later(r),
      emitArtifact: this.emitArtifact.bind(this),
      finalize: this.finalize.bind(this),
      keepResumePoint: (rec, input, point) => {
        if (!this.o.resumePoints) return;
        keepResumePoint(this.o.resumePoints, rec, input, point, () => {
          this.track(rec);
          this.changed();
        });
      },
    };
    return executorEvents(rec, ops, this.o.inputTimeoutSecs ?? DEFAULT_INPUT_TIMEOUT_SECS);
  }

  /** A resumed run's context (its resume point and reply: resumable.ts); undefined for any other run. */
  private resumed(rec: TaskRecord): Promise<TaskContext> | undefined {
    const reply = rec.resumeReply;
    if (reply === undefined || !this.o.resumePoints) return undefined;
    rec.resumeReply = undefined;
    return resumedContext(this.o.resumePoints, rec, reply);
  }

  private async run(rec: TaskRecord): Promise<void> {
    if (rec.state !== 'working') this.setState(rec, 'working');
    // Any other run starts its executor in this same turn, as it always has: when admit() returns,
    // the task is `working` with its executor running.
    const resumed = this.resumed(rec);
    const outcome = resumed
      ? await resumed.then((ctx) => runExecutor(this.o.executor, ctx, this.reportsOf(rec)), failedBy)
      : await runExecutor(this.o.executor, taskContext(rec), this.reportsOf(rec));
    if (!rec.final) this.finalize(rec, outcome.state, outcome.state === 'completed' ? outcome.text : (outcome.reason ?? outcome.text));
    this.running = undefined;
    if (this.o.acceptance === 'single') this.resolveDone();
    this.pump();
  }
}
