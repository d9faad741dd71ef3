/**
 * One attempt of a task's agent loop: driver turns, tool calls, compaction, until `end_turn` /
 * `max_tokens`, an error, the turn budget, the spend ceiling or cancellation.
 */
import { closeSync, constants, ftruncateSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  boundedError,
  buildDriverRequest,
  type ContentBlock,
  type ConversationMessage,
  type DriverRequest,
  type ToolCallBlock,
  type ToolSpec,
} from '../inference/wire.ts';
import type { ContinuationState } from '../inference/continuation.ts';
import { NO_CALLER, threadKey, type ConversationOwner } from '../inference/conversation-store.ts';
import { failureInfo, type FailureInfo } from '../errors.ts';
import type { SpendMeter } from '../inference/spend.ts';
import type { TokenCounter } from '../inference/tokens.ts';
import type { CapsuleManifest } from '../manifest/capsule.ts';
import type { TraceWriter } from '../trace/writer.ts';
import type { HookPort } from '../hooks/port.ts';
import type { SessionComponents } from './components.ts';
import { describe, type ToolDispatcher } from './tools.ts';
import { meteredInference, type Answered } from './metered-inference.ts';
import { fromHookMessages, toHookMessage } from '../hooks/conversation.ts';
import { textOf, toolPairProblem } from '../inference/messages.ts';
import { startChatSpan, startCompactionSpan, startToolSpan } from '../telemetry/spans.ts';

export type TaskExit = 'completed' | 'failed' | 'max_turns_reached' | 'spend_ceiling_reached' | 'canceled';

export interface LoopEvents {
  status(message: string): void;
  artifact(a: { name: string; data?: unknown; text?: string }): void;
}

/**
 * How a task that was stopped ends: canceled, unless it was stopped because its request-input got
 * no reply in time (`lifecycle.input_timeout_secs`), which fails the task (wit-interfaces.md).
 */
function abortedExit(signal: AbortSignal, when: string): { exit: TaskExit; reason: string } {
  const why = signal.reason as { code?: unknown; message?: unknown } | undefined;
  if (why && why.code === 'E-A2A-010') return { exit: 'failed', reason: String(why.message) };
  return { exit: 'canceled', reason: `canceled ${when}` };
}

export interface AttemptResult {
  exit: TaskExit;
  text?: string;
  reason?: string;
  turns: number;
  /** An on-compaction error: it ends the session, not only the task (wit-interfaces.md). */
  endsSession?: boolean;
  /** Code and fix hint of the failure, when it had one (printed by `mur run`). */
  error?: FailureInfo;
}

export interface LoopDeps {
  manifest: CapsuleManifest;
  workdir: string;
  trace: TraceWriter;
  hooks: HookPort;
  components: SessionComponents;
  tools: ToolDispatcher;
  counter: TokenCounter;
  spend: SpendMeter;
  continuation: ContinuationState;
  system: string;
  promptCacheKey: string;
  /** Session-wide counters, updated in place. */
  totals: Totals;
  /** The compaction hook's system prompt (the manifest's, or its file's contents). */
  compactionPrompt?: string;
  /** Where the task is, kept current for its resume point (resume-point.ts). */
  progress?: TaskProgress;
}

/** Where a task's loop is: what a resume point needs beside the conversation. */
export interface TaskProgress {
  /** Turns of the task's attempts before the current one. */
  turnsBefore: number;
  reopens: number;
  /** The reopen feedback lines so far. */
  feedback: string[];
  /** The tool call running now, and its turn (counted within the attempt). */
  call?: { turn: number; block: ToolCallBlock };
}

export interface Totals {
  turns: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  shellCalls: number;
}

/** Counted once per message object: messages never change after they enter the history. */
const messageTokens = new WeakMap<object, number>();

export async function conversationTokens(counter: TokenCounter, system: string, tools: ToolSpec[], history: readonly ConversationMessage[]): Promise<number> {
  return (await fixedTokens(counter, system, JSON.stringify(tools))) + (await historyTokens(counter, history));
}

/** Per counter: the tokens of a request's fixed part (system prompt, tool specs) by its text. */
const fixedCounts = new WeakMap<TokenCounter, Map<string, number>>();
/** Fixed parts remembered per counter: a session's is one text; a few cover capsules whose tools change. */
const FIXED_KEPT = 4;

/**
 * The system prompt and tool specs are the same text every turn of every task of a session: counted
 * once, not again each turn (on `mur serve` their count was most of a one-turn task's counting).
 */
async function fixedTokens(counter: TokenCounter, system: string, toolsJson: string): Promise<number> {
  let kept = fixedCounts.get(counter);
  if (!kept) fixedCounts.set(counter, (kept = new Map()));
  const key = `${system}\u0000${toolsJson}`;
  const known = kept.get(key);
  if (known !== undefined) return known;
  const [s, t] = await counter.countMany([system, toolsJson]);
  kept.set(key, s! + t!);
  if (kept.size > FIXED_KEPT) kept.delete(kept.keys().next().value!);
  return s! + t!;
}

/**
 * Tokens of the messages alone, counted as the driver request carries them (role, content, tool
 * pairing; never the runtime's own bookkeeping such as ids): the one count the loop's budget and a
 * task's `prior-tokens` share.
 */
export async function historyTokens(counter: TokenCounter, history: readonly ConversationMessage[]): Promise<number> {
  const uncounted = history.filter((m) => !messageTokens.has(m));
  if (uncounted.length) {
    // One round trip to the counting worker for every message not counted yet.
    const counts = await counter.countMany(
      uncounted.map((m) => JSON.stringify({ role: m.role, content: m.content, tool_call_id: m.tool_call_id, is_error: m.is_error })),
    );
    for (const [i, m] of uncounted.entries()) messageTokens.set(m, counts[i]!);
  }
  let n = 0;
  for (const m of history) n += messageTokens.get(m)!;
  return n;
}

/**
 * One attempt. With `from` (a resumed task), it begins inside turn `from.turn`, at the tool calls
 * of that turn still to run (the first the one that was waiting for input), then goes on as usual.
 */
export async function runAttempt(
  d: LoopDeps,
  task: { taskId: string; contextId: string; owner?: ConversationOwner },
  history: ConversationMessage[],
  maxTurns: number,
  ev: LoopEvents,
  signal: AbortSignal,
  from?: { turn: number; calls: ToolCallBlock[] },
): Promise<AttemptResult> {
  const inf = d.manifest.inference!;
  const tools = d.tools.inventory();
  let turns = 0;
  if (from) {
    turns = from.turn;
    const stopped = await runToolCalls(d, from.calls, turns, history, ev, signal);
    if (stopped) return { ...stopped, turns };
  }
  // A held continuation is the caller's thread's: another caller's same contextId never continues it.
  const thread = threadKey(task.owner ?? NO_CALLER, task.contextId);
  while (turns < maxTurns) {
    if (signal.aborted) return { ...abortedExit(signal, 'between turns'), turns };
    const turn = ++turns;
    d.totals.turns++;
    // The length sent before the reply: what a continuation id returned this turn covers.
    const sentLength = history.length;
    const plan = d.continuation.plan(thread, history);
    const request = buildDriverRequest({
      model: inf.model,
      maxTokens: inf.maxTokens,
      system: d.system,
      messages: plan.messages,
      tools,
      promptCacheKey: d.promptCacheKey,
      continuationId: plan.continuationId,
    });
    // Budget decisions always use the full conversation, never the (smaller) continued payload.
    const inputTokens = await conversationTokens(d.counter, d.system, tools, history);
    const metered = await inferTurn(d, turn, request, inputTokens, ev, signal);
    if ('ended' in metered) return { ...metered.ended, turns };
    const { text: responseText, response: resp, continuationId, outputTokens, started } = metered;
    // Every HTTP attempt of a driver that retried, on the trace before the turn's own event.
    for (const a of resp.attempts ?? []) d.trace.write('inference_attempt', { turn, model: inf.model, ...a });
    d.totals.inputTokens += inputTokens;
    d.totals.outputTokens += outputTokens;
    const toolCalls = resp.content.filter((b) => b.type === 'tool_call');
    const decision = resp.stop_reason === 'tool_call' ? 'tool_call' : resp.stop_reason === 'error' ? 'error' : 'end_turn';
    d.trace.write('inference', {
      turn,
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      decision,
      tool_name: toolCalls[0]?.name,
      model: inf.model,
      duration_ms: Date.now() - started,
      stop_reason: resp.stop_reason,
      continued: plan.full ? undefined : true,
      // Provider-reported usage, member by member: omitted members stay absent, never 0.
      reported_usage: resp.usage,
    });
    const artifacts = await d.hooks.inference({
      turn,
      inputTokens: BigInt(inputTokens),
      outputTokens: BigInt(outputTokens),
      decision,
      toolName: toolCalls[0]?.name,
      prompt: undefined,
      output: responseText,
      tools: undefined,
    });
    for (const a of artifacts) ev.artifact({ name: 'hook-artifact', data: safeJson(a) });
    if (resp.stop_reason === 'error') {
      d.continuation.drop();
      return { exit: 'failed', reason: `driver reported an error: ${resp.error ?? 'no detail'}`, turns };
    }

    const compacted = await compactIfFull(d, { turn, inputTokens, outputTokens, tools }, history);
    if ('ended' in compacted) return { ...compacted.ended, turns };
    const replaced = compacted.replaced;

    history.push({ role: 'assistant', content: resp.content, id: `msg_${crypto.randomUUID()}` });
    // A replace-context committed this turn drops the held id, including one the driver just
    // returned: the provider's state no longer matches the history, so the next turn resends it.
    if (replaced) d.continuation.replaceContext();
    else d.continuation.acknowledge(thread, continuationId, history, sentLength);

    if (resp.stop_reason === 'tool_call' && toolCalls.length) {
      const stopped = await runToolCalls(d, toolCalls, turn, history, ev, signal);
      if (stopped) return { ...stopped, turns };
      continue;
    }
    const text = textOf({ content: resp.content });
    await writeResult(d.workdir, text);
    return { exit: 'completed', text, turns };
  }
  const reason = `inference loop exceeded ${maxTurns} turns`;
  await writeResult(d.workdir, `error: ${reason}`);
  return { exit: 'max_turns_reached', reason, turns };
}

/**
 * One turn's metered driver call (metered-inference.ts): its status line and chat span once
 * admitted, and how the attempt ends when it is refused, cancelled or fails.
 */
async function inferTurn(
  d: LoopDeps,
  turn: number,
  request: DriverRequest,
  inputTokens: number,
  ev: LoopEvents,
  signal: AbortSignal,
): Promise<{ ended: Omit<AttemptResult, 'turns'> } | (Answered & { started: number })> {
  const inf = d.manifest.inference!;
  let started = 0;
  const metered = await meteredInference(d, {
    request,
    inputTokens,
    signal,
    admitted: () => {
      ev.status(`inference turn ${turn}`);
      startChatSpan(d.trace, { model: inf.model, turn, maxTokens: inf.maxTokens });
      started = Date.now();
    },
  });
  if (metered.kind === 'refused') {
    d.trace.write('spend_ceiling_reached', { turn, requested: metered.refusal.requested, spent: metered.refusal.spent, limit: metered.refusal.limit });
    return { ended: { exit: 'spend_ceiling_reached', reason: metered.refusal.message } };
  }
  if (metered.kind === 'answered') return { ...metered, started };
  const e = metered.error;
  if (metered.stage === 'call' && signal.aborted) return { ended: abortedExit(signal, 'during inference') };
  const error = metered.stage === 'call' ? boundedError(describe(e)) : describe(e);
  d.trace.write('inference', {
    turn,
    input_tokens: inputTokens,
    output_tokens: 0,
    decision: 'error',
    model: inf.model,
    duration_ms: Date.now() - started,
    error,
  });
  const reason = metered.stage === 'call' ? `inference driver failed: ${error}` : `unreadable driver response: ${error}`;
  return { ended: { exit: 'failed', reason, ...withError(e) } };
}

/**
 * Compaction after a turn: when the turn's occupancy (full input + output) reaches the threshold
 * of the context window, the on-compaction hooks run; a committed replacement with matching tool
 * pairs replaces the history (the held continuation dropped), anything else is refused. A
 * compaction hook's error ends the attempt and the session.
 */
async function compactIfFull(
  d: LoopDeps,
  o: { turn: number; inputTokens: number; outputTokens: number; tools: ToolSpec[] },
  history: ConversationMessage[],
): Promise<{ ended: Omit<AttemptResult, 'turns'> } | { replaced: boolean }> {
  const inf = d.manifest.inference!;
  const { turn, inputTokens, outputTokens, tools } = o;
  const window = d.manifest.context.maxTokens;
  const threshold = inf.compaction.threshold;
  if (!window || (inputTokens + outputTokens) / window < threshold) return { replaced: false };
  const before = inputTokens;
  const compactionSpan = startCompactionSpan(d.trace, { turn, tokensBefore: before, threshold });
  const outcome = await d.hooks.compaction({
    messages: history.map(toHookMessage),
    sessionTokens: BigInt(inputTokens + outputTokens),
    threshold,
    model: inf.compaction.model,
    systemPrompt: d.compactionPrompt,
  });
  compactionSpan.end(outcome);
  if (outcome.kind === 'fatal') {
    return {
      ended: {
        exit: outcome.exitStatus === 'spend_ceiling_reached' ? 'spend_ceiling_reached' : 'failed',
        reason: `compaction hook ${outcome.hook} failed: ${outcome.message}`,
        endsSession: true,
      },
    };
  }
  if (outcome.kind !== 'replaced') return { replaced: false };
  let replacement: ConversationMessage[] | undefined;
  let problem: string | undefined;
  try {
    replacement = fromHookMessages(outcome.messages, 'replace-context');
    problem = toolPairProblem(replacement);
  } catch (e) {
    problem = (e as Error).message;
  }
  if (!replacement || problem) {
    d.trace.write('compaction_refused', { turn, hook: outcome.hook, reason: problem });
    return { replaced: false };
  }
  history.splice(0, history.length, ...replacement);
  d.continuation.replaceContext();
  d.trace.write('compaction', {
    turn,
    hook: outcome.hook,
    tokens_before: before,
    tokens_after: await conversationTokens(d.counter, d.system, tools, history),
    messages_after: history.length,
  });
  return { replaced: true };
}

/**
 * The tool calls of one turn, in order, each in its `execute_tool` span, its result appended to
 * the history. Returns how the attempt ends when it is cancelled during a call.
 */
async function runToolCalls(
  d: LoopDeps,
  toolCalls: readonly ContentBlock[],
  turn: number,
  history: ConversationMessage[],
  ev: LoopEvents,
  signal: AbortSignal,
): Promise<Omit<AttemptResult, 'turns'> | undefined> {
  for (const call of toolCalls) {
    if (call.type !== 'tool_call') continue;
    let out: Awaited<ReturnType<typeof d.tools.dispatch>>;
    const toolSpan = startToolSpan(d.trace, { name: call.name, callId: call.id, turn });
    if (d.progress) d.progress.call = { turn, block: call };
    try {
      out = await d.tools.dispatch(call.name, call.input, { turn, signal, traceparent: toolSpan.traceparent });
    } catch (e) {
      toolSpan.end({ error: e });
      if (signal.aborted) return abortedExit(signal, `during tool ${call.name}`);
      throw e;
    } finally {
      if (d.progress) d.progress.call = undefined;
    }
    toolSpan.end({ status: out.status, kind: out.kind, isError: out.isError });
    if (out.kind === 'shell' && out.status !== 'denied') d.totals.shellCalls++;
    else if (out.status !== 'denied') d.totals.toolCalls++;
    ev.artifact({ name: 'tool-call', data: { tool: call.name, id: call.id, status: out.status, duration_ms: out.durationMs } });
    history.push({
      role: 'tool',
      content: [{ type: 'text', text: out.content }],
      tool_call_id: call.id,
      is_error: out.isError || undefined,
      id: `msg_${crypto.randomUUID()}`,
    });
  }
  return undefined;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function withError(e: unknown): { error?: FailureInfo } {
  const f = failureInfo(e);
  return f ? { error: f } : {};
}

/**
 * `out/result.txt`, written before the attempt's outcome is returned: opened without truncating,
 * the text written at its start, then cut to the text's length, synchronously. Why not
 * writeFileSync: on ext4, a file truncated to nothing and written again starts its writeback at
 * close (the replace-by-truncate heuristic, auto_da_alloc), which blocked the main thread 0.55 ms
 * per task (issue 18); a file cut only after the write is not one of those. Why not fs/promises'
 * writeFile: its open, write and close were three trips through the threadpool and ≈ 50 µs of the
 * main thread's CPU per task, against ≈ 5 µs here (measured on the 2-core VM, issue 42).
 */
async function writeResult(workdir: string, text: string): Promise<void> {
  const bytes = Buffer.from(text);
  const fd = openSync(join(workdir, 'out', 'result.txt'), constants.O_WRONLY | constants.O_CREAT, 0o666);
  try {
    // A write to a regular file may be short (a full disk): the rest goes after it, or it throws.
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off, off);
    ftruncateSync(fd, bytes.length);
  } finally {
    closeSync(fd);
  }
}
