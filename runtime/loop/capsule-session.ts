/**
 * A running capsule session: one staged capsule, its components, hooks and trace, serving tasks
 * one after another. `runTask` runs one task through the agent loop with its reopen rounds; the
 * caller (`mur run`, or the A2A executor of `mur serve`) decides where tasks come from.
 */
import { ContinuationState } from '../inference/continuation.ts';
import { SpendMeter } from '../inference/spend.ts';
import { tokenCounter, type TokenCounter } from '../inference/tokens.ts';
import { promptCacheKey } from '../inference/cache-key.ts';
import { systemPrompt } from '../inference/capsule-block.ts';
import type { ConversationMessage, ToolCallBlock } from '../inference/wire.ts';
import type { StagedArtifact, StagedCapsule } from '../session/stage.ts';
import { TraceWriter } from '../trace/writer.ts';
import { MurError, type FailureInfo } from '../errors.ts';
import { NO_HOOKS, type HookMessage, type HookPort, type HookServices } from '../hooks/port.ts';
import { SessionComponents, NO_TASK_IO, type TaskIo } from './components.ts';
import { traceNetworkDenied } from '../trace/network-denied.ts';
import { ToolDispatcher, type RuntimeTool } from './tools.ts';
import { compactionPrompt, manifestPrompt } from './prompt-files.ts';
import { sideInference } from './side-inference.ts';
import { historyTokens, type LoopDeps, type TaskExit, type TaskProgress, type Totals } from './agent-loop.ts';
import { runAttempts, type SessionEnd } from './task-attempts.ts';
import { askingWith, NO_TOTALS, readResumePoint, takeResumePoint, taskTotals, type RunningTask } from './resume-point.ts';
import { fromHookMessages, toHookMessage } from '../hooks/conversation.ts';
import { BoundedHistories, BoundedRecord } from './conversation-bounds.ts';
import { userText } from '../inference/messages.ts';
import { NO_CALLER, ownerId, threadKey, type ConversationOwner, type ConversationStore, type OwnedMessage } from '../inference/conversation-store.ts';

export { compactionPrompt } from './prompt-files.ts';
export { SpendRefusedError } from './side-inference.ts';
export type { SessionEnd } from './task-attempts.ts';

export interface TaskInput {
  taskId: string;
  contextId: string;
  /**
   * The A2A caller who sent it (default NO_CALLER: `mur run`'s task). Its threaded history, its
   * held continuation and what `murmur:conversation/read` shows during it are this owner's only.
   */
  owner?: ConversationOwner;
  text: string;
  source: 'a2a' | 'task_md';
  origin?: string;
  trust?: string;
  messageId?: string;
  traceparent?: string;
}

export interface TaskReport {
  exit: TaskExit;
  text?: string;
  reason?: string;
  /** Code and fix hint of the failure, when it had one. */
  error?: FailureInfo;
  turns: number;
  reopens: number;
  /** Set when this task ended the session (an on-compaction error): no further task runs. */
  sessionEnded?: SessionEnd;
}

/** Messages the session's conversation record keeps (the newest; `murmur:conversation/read`). */
export const RECORD_LIMIT = 5000;
/** Bytes (UTF-8 of the message content) the record keeps at most: the newest messages that fit. */
export const RECORD_MAX_BYTES = 16 * 1024 * 1024;
/** Bytes the threaded histories of all contexts keep at most; the least recently used context goes first. */
export const HISTORIES_MAX_BYTES = 32 * 1024 * 1024;

export interface TaskSink extends TaskIo {
  status(message: string): void;
  artifact(a: { name: string; data?: unknown; text?: string }): void;
}

export const SILENT_SINK: TaskSink = { ...NO_TASK_IO, status: () => {}, artifact: () => {} };

export interface SessionOptions {
  /** Builds the hook bus once services exist; default: no hooks. */
  hooks?: (services: HookServices, trace: TraceWriter) => Promise<HookPort>;
  runtimeTools?: (session: CapsuleSession) => RuntimeTool[];
  hostEnv?: NodeJS.ProcessEnv;
  /** Durable conversation record and threaded histories (mur serve's store); default: this process only. */
  conversations?: ConversationStore;
  /**
   * Leave the token counter's encoder build to the caller's `warmUp()` (mur serve: once it is
   * ready) instead of starting it as the session opens. Default false.
   */
  deferWarmUp?: boolean;
}

export class CapsuleSession {
  readonly staged: StagedCapsule;
  readonly trace: TraceWriter;
  readonly components: SessionComponents;
  readonly counter: TokenCounter = tokenCounter();
  readonly spend: SpendMeter;
  readonly continuation = new ContinuationState();
  readonly totals: Totals = { turns: 0, inputTokens: 0, outputTokens: 0, toolCalls: 0, shellCalls: 0 };
  hooks: HookPort = NO_HOOKS;
  private tools!: ToolDispatcher;
  private system = '';
  private compactionPrompt: string | undefined;
  private startedAt = Date.now();
  private histories = new BoundedHistories(HISTORIES_MAX_BYTES);
  private current: RunningTask | undefined;
  private readonly hostEnv: NodeJS.ProcessEnv;
  private closed = false;
  private endedBy: SessionEnd | undefined;
  /** The session's conversation record: every message of its finished tasks, oldest first. */
  private record = new BoundedRecord(RECORD_LIMIT, RECORD_MAX_BYTES);
  private recorded = new WeakSet<ConversationMessage>();
  /** The owner (ownerId) of each message in the record: conversation/read shows a task its own owner's. */
  private ownerOf = new WeakMap<ConversationMessage, string>();
  /** The owner of the task being run, from its on-task-start to its on-task-end (conversation/read's scope). */
  private serving: ConversationOwner | undefined;
  private endListeners: Array<(e: SessionEnd) => void> = [];
  /** What the session's assembly opened beside it (MCP connections), closed last by close(). */
  private closers: Array<() => Promise<void>> = [];
  private conversations: ConversationStore | undefined;

  private constructor(staged: StagedCapsule, hostEnv: NodeJS.ProcessEnv) {
    this.staged = staged;
    this.hostEnv = hostEnv;
    this.trace = new TraceWriter(staged.workdir.trace, staged.sessionId);
    this.components = new SessionComponents(staged, hostEnv, (kind, name) =>
      traceNetworkDenied(
        () => this.trace,
        kind,
        name,
        () => this.current?.input.taskId,
      ),
    );
    this.spend = new SpendMeter(staged.manifest.inference?.maxSessionTokens);
  }

  static async open(staged: StagedCapsule, opts: SessionOptions = {}): Promise<CapsuleSession> {
    const s = new CapsuleSession(staged, opts.hostEnv ?? process.env);
    const m = staged.manifest;
    if (!m.inference) throw new MurError('E-RUN-001', `${m.name} is a script capsule (no inference block); run it with the script runner`);
    // The encoder builds in the counting worker while hooks and components start, not on this
    // thread in front of the first provider request.
    if (!opts.deferWarmUp) s.counter.prewarm();
    // Serving (warm-up deferred until the front door listens): load the components now, so a first
    // run's transpiles (child processes) overlap the rest of the start.
    else s.components.preload(staged.artifacts.filter((a) => a.manifest.runtime === 'tool' && a.wasmPath));
    if (opts.conversations) {
      s.conversations = opts.conversations;
      // The record of earlier launches: conversation/read is the capsule's, not one process's.
      s.joinRecord(await opts.conversations.loadRecord(RECORD_LIMIT, RECORD_MAX_BYTES));
    }
    s.system = systemPrompt(m.name, m.version, manifestPrompt(staged));
    s.compactionPrompt = compactionPrompt(staged);
    if (opts.hooks) s.hooks = await opts.hooks(s.services(), s.trace);
    s.tools = new ToolDispatcher(staged, s.components, s.hooks, s.trace, opts.runtimeTools?.(s) ?? [], s.hostEnv);
    s.trace.write('session_start', {
      capsule_name: m.name,
      capsule_version: m.version,
      model: m.inference.model,
      max_turns: m.inference.maxTurns,
      tools_declared: s.tools.inventory().map((t) => t.name),
      network_allow: m.capabilities.network.allow,
      shell_allow: m.capabilities.shell?.allow ?? [],
      filesystem_scope: m.capabilities.filesystem.scope,
      max_session_tokens: m.inference.maxSessionTokens,
      system_prompt: m.trace.includeToolOutput ? s.system : undefined,
    });
    await s.hooks.sessionStart({
      capsuleName: m.name,
      capsuleVersion: m.version,
      sessionId: staged.sessionId,
      model: m.inference.model,
      capabilities: [
        ...m.capabilities.network.allow.map((n) => `network:${n}`),
        ...(m.capabilities.shell?.allow ?? []).map((b) => `shell:${b}`),
        `filesystem:${m.capabilities.filesystem.scope}`,
      ],
    });
    return s;
  }

  /**
   * Starts, in the background, what the first task would otherwise wait for: the token counter's
   * encoder and the driver's and tools' workers (SessionComponents.prewarm). Never rejects.
   */
  warmUp(tools: StagedArtifact[]): Promise<void> {
    this.counter.prewarm();
    return this.components.prewarm(tools);
  }

  /** Set once the session has ended on its own (an on-compaction error); see TaskReport. */
  get ended(): SessionEnd | undefined {
    return this.endedBy;
  }

  /** Runs `close` when the session closes, after its components stop (never throws out of close()). */
  onClose(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  /** Called once when the session ends on its own, so a server can stop taking tasks. */
  onEnded(listener: (e: SessionEnd) => void): void {
    this.endListeners.push(listener);
  }

  /** The provider URL the driver calls: `inference.endpoint`, else $MURMUR_INFERENCE_ENDPOINT. */
  get inferenceEndpoint(): string | undefined {
    return this.staged.manifest.inference?.endpoint ?? this.hostEnv.MURMUR_INFERENCE_ENDPOINT;
  }

  /** The driver continuation id held for the next turn, if any (diagnostics, tests). */
  get continuationHeld(): string | undefined {
    return this.continuation.heldId;
  }

  /** The task being run, if any (delegate-task reads its trust class). */
  get currentTask(): TaskInput | undefined {
    return this.current?.input;
  }

  get sessionId(): string {
    return this.staged.sessionId;
  }

  toolInventory(): { name: string; description?: string }[] {
    return this.tools.inventory();
  }

  /** Runs one task through the loop (its attempts: task-attempts.ts). */
  async runTask(input: TaskInput, sink: TaskSink = SILENT_SINK, signal: AbortSignal = new AbortController().signal): Promise<TaskReport> {
    this.checkOpen();
    const m = this.staged.manifest;
    const started = Date.now();
    const before = { ...this.totals };
    this.components.io = sink;
    this.trace.write('task_start', {
      task_id: input.taskId,
      context_id: input.contextId,
      source: input.source,
      origin: input.origin ?? 'user',
      trust: input.trust ?? 'untrusted',
      message_bytes: Buffer.byteLength(input.text),
      traceparent_from_caller: input.traceparent,
    });
    // A shared store has other writers (replicas): their tasks join this session's record first.
    if (this.conversations?.shared && this.conversations.othersSince) {
      this.joinRecord(await this.conversations.othersSince(RECORD_LIMIT, RECORD_MAX_BYTES).catch(() => []));
    }
    const threaded = m.lifecycle.conversation === 'threaded';
    // A thread is the caller's and the context id's: another caller's same contextId is another
    // thread, so a guessed context id neither reads nor extends someone else's conversation.
    const owner = input.owner ?? NO_CALLER;
    this.serving = owner;
    const thread = threadKey(owner, input.contextId);
    // A shared store has other writers (replicas): the history held here may miss their tasks.
    const held = this.conversations?.shared ? undefined : this.histories.get(thread);
    const prior = threaded ? (held ?? (await this.storedHistory(owner, input.contextId))) : [];
    const window = m.context.maxTokens ?? 0;
    const seed = await this.hooks.taskStart({
      taskId: input.taskId,
      contextId: input.contextId,
      source: input.source,
      inputBytes: BigInt(Buffer.byteLength(input.text)),
      budgetTokens: BigInt(Math.floor(window * m.context.seedBudget)),
      contextWindow: BigInt(window),
      priorTokens: BigInt(await historyTokens(this.counter, prior)),
    });
    // Seeded messages go at the head: ahead of loaded history and of the task message.
    const history: ConversationMessage[] = [...fromHookMessages(seed.messages, 'seed-context'), ...prior, userText(input.text)];
    const progress: TaskProgress = { turnsBefore: 0, reopens: 0, feedback: [] };
    return this.runLoop({ input, asGiven: input.text, history, progress, carried: NO_TOTALS, before, started }, sink, signal);
  }

  /**
   * Continues a task another process left waiting for input (docs/a2a.md "Restart"): the loop is
   * rebuilt from `raw`, its resume point (resume-point.ts), and the pending tool call runs again
   * with `reply` queued: the first request-input of the re-run returns it at once. on-task-start
   * is not run again (its seed is in the conversation); the trace says `task_resumed`.
   */
  async resumeTask(raw: unknown, reply: string, sink: TaskSink = SILENT_SINK, signal: AbortSignal = new AbortController().signal): Promise<TaskReport> {
    this.checkOpen();
    const started = Date.now();
    const before = { ...this.totals };
    const { point, calls } = readResumePoint(raw);
    const input: TaskInput = point.task;
    const owner = input.owner ?? NO_CALLER;
    this.serving = owner;
    for (const i of point.recorded) {
      const msg = point.history[i];
      if (!msg) continue;
      this.recorded.add(msg);
      this.ownerOf.set(msg, ownerId(owner));
    }
    const call = point.call;
    this.trace.write('task_resumed', { task_id: input.taskId, context_id: input.contextId, tool_name: call.name, call_id: call.id, turn: point.turn });
    const progress: TaskProgress = { turnsBefore: point.turnsBefore, reopens: point.reopens, feedback: point.feedback };
    return this.runLoop({ input, asGiven: point.asGiven, history: point.history, progress, carried: point.totals, before, started }, sink, signal, {
      from: { turn: point.turn, calls },
      reply,
    });
  }

  private checkOpen(): void {
    if (this.endedBy) {
      throw new MurError('E-RUN-021', `the session has ended (${this.endedBy.exitStatus}): ${this.endedBy.reason}`, {
        hint: 'start a new session; an on-compaction error ends the session it happens in',
      });
    }
  }

  /** The task's attempts (task-attempts.ts), then what its end keeps: histories, the record, `task_end`. */
  private async runLoop(
    current: RunningTask,
    sink: TaskSink,
    signal: AbortSignal,
    resume?: { from: { turn: number; calls: ToolCallBlock[] }; reply: string },
  ): Promise<TaskReport> {
    const m = this.staged.manifest;
    const { input, history } = current;
    const owner = input.owner ?? NO_CALLER;
    this.current = current;
    this.components.io = this.asking(sink, resume?.reply);
    const deps: LoopDeps = {
      manifest: m,
      workdir: this.staged.workdir.dir,
      trace: this.trace,
      hooks: this.hooks,
      components: this.components,
      tools: this.tools,
      counter: this.counter,
      spend: this.spend,
      continuation: this.continuation,
      system: this.system,
      promptCacheKey: promptCacheKey(m.name, m.version, input.contextId),
      totals: this.totals,
      compactionPrompt: this.compactionPrompt,
      progress: current.progress,
    };
    const ended = { value: this.endedBy };
    const run = { task: input, history, sink, signal, current, progress: current.progress, ended, ...(resume ? { from: resume.from } : {}) };
    const { result, reopens, turnsUsed } = await runAttempts(deps, run);
    this.endedBy = ended.value;
    if (m.lifecycle.conversation === 'threaded' && !this.conversations?.shared) this.histories.keep(threadKey(owner, input.contextId), history);
    const added = this.keepInRecord(history, owner);
    if (this.conversations && added.length > 0) {
      await this.conversations.append(owner, input.contextId, added).catch((e: unknown) => {
        process.stderr.write(
          `mur: conversation store: saving ${added.length} message(s) of task ${input.taskId} failed: ${e instanceof Error ? e.message : String(e)} [E-STORE-003]\n`,
        );
      });
    }
    // A held continuation outlives the task ("for the rest of the session loop"): the next task of
    // this context continues it if its history still starts with what the driver acknowledged.
    const t = taskTotals(this.totals, current.before, current.carried);
    this.trace.write('task_end', {
      task_id: input.taskId,
      exit_status: result.exit === 'completed' ? 'ok' : result.exit,
      reason: result.reason,
      duration_ms: Date.now() - current.started,
      turns: t.turns,
      input_tokens: t.inputTokens,
      output_tokens: t.outputTokens,
      tool_calls: t.toolCalls,
      shell_calls: t.shellCalls,
      reopen_count: reopens,
    });
    this.current = undefined;
    this.serving = undefined;
    this.components.io = NO_TASK_IO;
    const report: TaskReport = {
      exit: result.exit,
      text: result.text,
      reason: result.reason,
      ...(result.error ? { error: result.error } : {}),
      turns: turnsUsed,
      reopens,
    };
    if (this.endedBy) {
      report.sessionEnded = this.endedBy;
      for (const l of this.endListeners.splice(0)) l(this.endedBy);
    }
    return report;
  }

  /**
   * The sink the task's components reach: its request-input hands the task machine a resume point
   * of where the loop is (resume-point.ts); a resumed task's first request-input returns `reply`.
   */
  private asking(sink: TaskSink, reply: string | undefined): TaskSink {
    if (!sink.requestInput) return sink;
    const pointOf = (prompt: string) => {
      const c = this.current;
      if (!c) return undefined;
      const totals = taskTotals(this.totals, c.before, c.carried);
      return takeResumePoint({ ...c, task: c.input, prompt, isRecorded: (msg) => this.recorded.has(msg), totals });
    };
    return { ...sink, requestInput: askingWith(sink.requestInput, reply, pointOf) };
  }

  /** Ends the session: on-session-end, async hooks drained, `session_end` written, components stopped. */
  async close(exitStatus: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A session that ended on its own keeps the status it ended with.
    if (this.endedBy) exitStatus = this.endedBy.exitStatus;
    const t = this.totals;
    await this.hooks.sessionEnd({
      totalTurns: t.turns,
      totalInputTokens: BigInt(t.inputTokens),
      totalOutputTokens: BigInt(t.outputTokens),
      totalToolCalls: t.toolCalls,
      totalShellCalls: t.shellCalls,
      durationMs: BigInt(Date.now() - this.startedAt),
      exitStatus,
    });
    await this.hooks.drain();
    this.trace.write('session_end', {
      total_turns: t.turns,
      total_input_tokens: t.inputTokens,
      total_output_tokens: t.outputTokens,
      total_tool_calls: t.toolCalls,
      total_shell_calls: t.shellCalls,
      duration_ms: Date.now() - this.startedAt,
      exit_status: exitStatus,
    });
    await this.hooks.close();
    await this.components.close();
    for (const c of this.closers.splice(0)) await c().catch(() => {});
    this.trace.close();
  }

  /** Appends a task's messages the record does not hold yet (a threaded task repeats its prior ones). */
  private keepInRecord(history: readonly ConversationMessage[], owner: ConversationOwner): ConversationMessage[] {
    const added: ConversationMessage[] = [];
    const id = ownerId(owner);
    for (const m of history) {
      if (this.recorded.has(m)) continue;
      this.recorded.add(m);
      this.ownerOf.set(m, id);
      added.push(m);
    }
    this.record.push(added);
    return added;
  }

  /** Messages of the store's record (at open, or the other replicas' since) join this one, with their owners. */
  private joinRecord(stored: readonly OwnedMessage[]): void {
    for (const { owner, message } of stored) {
      this.recorded.add(message);
      this.ownerOf.set(message, ownerId(owner));
    }
    this.record.push(stored.map((o) => o.message));
  }

  /** A threaded context this process holds no history of: the owner's in the store (after a restart), else none. */
  private async storedHistory(owner: ConversationOwner, contextId: string): Promise<ConversationMessage[]> {
    if (!this.conversations) return [];
    const h = await this.conversations.loadContext(owner, contextId, HISTORIES_MAX_BYTES);
    // Already in the store (and in the record when it was recent): never appended again.
    for (const msg of h) this.recorded.add(msg);
    return h;
  }

  /**
   * `murmur:conversation/read`: the record of the session's finished tasks, then the running task's
   * messages not in it yet. Tool calls and results keep their structure (the same encoding a
   * compaction hook gets), so they never read as empty messages. During a task, only its owner's
   * messages: a hook's answer (a seed, a summary) may reach the task's caller, who must not learn
   * another caller's conversation through it. Outside a task (on-session-start, on-session-end)
   * no caller is being answered and the record is the capsule's whole.
   */
  private conversationRecord(): ConversationMessage[] {
    const current = (this.current?.history ?? []).filter((m) => !this.recorded.has(m));
    if (!this.serving) return [...this.record.messages, ...current];
    const id = ownerId(this.serving);
    return [...this.record.messages.filter((m) => this.ownerOf.get(m) === id), ...current];
  }

  private services(): HookServices {
    return {
      runInference: (req, hookName) => this.hookInference(req, hookName),
      countTokens: (text) => this.counter.count(text),
      taskIo: () => (this.current ? { input: { asGiven: this.current.asGiven, original: this.current.input.text }, output: this.current.output } : undefined),
      conversation: () => this.conversationRecord().map(toHookMessage),
    };
  }

  /** `murmur:runtime/inference`: one completion through the capsule's own driver, traced, metered. */
  private hookInference(req: { messages: HookMessage[]; systemPrompt?: string; model?: string }, hookName: string) {
    return sideInference(this, req, `hook:${hookName}`);
  }

  /**
   * An MCP server's sampling request (docs/mcp.md): one driver call through the one metered
   * inference, against the session's spend ceiling like a hook's, traced with origin `mcp:<server>`.
   */
  samplingInference(req: { messages: HookMessage[]; systemPrompt?: string }, server: string) {
    return sideInference(this, req, `mcp:${server}`);
  }
}
