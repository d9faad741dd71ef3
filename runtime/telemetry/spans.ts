/**
 * Session spans, with the OpenTelemetry GenAI semantic conventions (attribute names in semconv.ts,
 * the traceparent parser in traceparent.ts, usage normalisation in usage.ts).
 *
 *   invoke_agent <capsule>            one per task; parent = the caller's `traceparent`, else a root
 *   ├─ chat <model>                   one per inference turn (and per hook `run-inference` call)
 *   ├─ execute_tool <tool>            one per tool call (WASM tool, shell binary, runtime tool)
 *   │  ├─ shell <binary>              the process a shell tool ran
 *   │  ├─ call_denied <tool|binary>   a policy hook refused the call
 *   │  ├─ hook_dispatch on-tool-call  the decision / observation dispatch (when hooks are loaded)
 *   │  └─ (a peer's invoke_agent, through the traceparent delegate-task sends)
 *   ├─ compaction                     the on-compaction dispatch and its outcome
 *   └─ hook_dispatch <handler>        other hook dispatches; `hook <name>` per hook when the hook
 *                                     bus reports them (startHookSpan)
 *
 * Parents are always explicit contexts kept per session (keyed by its TraceWriter): the runtime
 * never relies on ambient async context. A session runs one task at a time and one tool call at a
 * time, so "the open tool span of this session" is well defined. Spans that only need the trace
 * event are made from it (a TraceWriter listener, synchronous with the write); spans that must
 * exist while work runs (tool calls, for traceparent propagation; chat turns; compaction) are
 * started by one-line calls in runtime/loop. Without `attachSpans` (instrumentSession) every call
 * here is a no-op.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { basename } from 'node:path';
import type { TraceEvent, TraceWriter } from '../trace/writer.ts';
import { currentTelemetry, type Telemetry } from './otel.ts';
import { CAPSULE, GEN_AI } from './semconv.ts';
import { formatTraceparent, parseTraceparent } from './traceparent.ts';
import { normaliseUsage } from './usage.ts';

export { CAPSULE, GEN_AI, providerFromDriver } from './semconv.ts';
export { formatTraceparent, parseTraceparent } from './traceparent.ts';
export { normaliseUsage, type NormalisedUsage } from './usage.ts';

// ---- per-session scope -------------------------------------------------------------------------

export interface SpanInfo {
  /** Capsule name: `gen_ai.agent.name`, and the `invoke_agent` span name. */
  capsule: string;
  version: string;
  /** The capsule's model (`inference.model`). */
  model?: string;
  /** `gen_ai.provider.name`; see providerFromDriver. */
  provider: string;
  /** Default: the process-wide telemetry at attach time. */
  telemetry?: Telemetry;
}

interface Open {
  span: Span;
  ctx: Context;
  kind: 'tool' | 'compaction' | 'handler' | 'hook';
}

interface TaskScope {
  span: Span;
  ctx: Context;
  contextId: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

class Scope {
  task: TaskScope | undefined;
  stack: Open[] = [];
  chat: Span | undefined;
  compaction: { span: Span; pending: boolean } | undefined;
  readonly detach: () => void;

  constructor(readonly traceWriter: TraceWriter, readonly info: SpanInfo, readonly telemetry: Telemetry) {
    this.detach = traceWriter.onEvent((e) => this.onEvent(e));
  }

  get tracer() {
    return this.telemetry.tracer;
  }

  /** Where a new child goes: the innermost open tool / compaction / hook span, else the task, else a root. */
  parent(): Context {
    return this.stack.at(-1)?.ctx ?? this.task?.ctx ?? ROOT_CONTEXT;
  }

  push(span: Span, kind: Open['kind'], parent: Context = this.parent()): Open {
    const o = { span, ctx: trace.setSpan(parent, span), kind };
    this.stack.push(o);
    return o;
  }

  pop(o: Open): void {
    const i = this.stack.lastIndexOf(o);
    if (i >= 0) this.stack.splice(i, 1);
  }

  startTask(e: TraceEvent): void {
    this.endTask(undefined, 'abandoned');
    const remote = parseTraceparent(str(e.traceparent_from_caller));
    const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
    const contextId = str(e.context_id) ?? '';
    const span = this.tracer.startSpan(`invoke_agent ${this.info.capsule}`, {
      kind: SpanKind.INTERNAL,
      attributes: clean({
        [GEN_AI.OPERATION_NAME]: 'invoke_agent',
        [GEN_AI.AGENT_NAME]: this.info.capsule,
        [GEN_AI.AGENT_VERSION]: this.info.version,
        [GEN_AI.PROVIDER_NAME]: this.info.provider,
        [GEN_AI.REQUEST_MODEL]: this.info.model,
        [GEN_AI.CONVERSATION_ID]: contextId,
        [CAPSULE.TASK_ID]: str(e.task_id),
        [CAPSULE.TASK_SOURCE]: str(e.source),
        [CAPSULE.TASK_ORIGIN]: str(e.origin),
        [CAPSULE.TASK_TRUST]: str(e.trust),
      }),
    }, parent);
    this.task = { span, ctx: trace.setSpan(parent, span), contextId, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  }

  endTask(e: TraceEvent | undefined, abandoned?: string): void {
    const t = this.task;
    if (!t) return;
    this.endChat('task ended during inference');
    for (const o of [...this.stack].reverse()) {
      o.span.setStatus({ code: SpanStatusCode.ERROR, message: 'task ended first' });
      o.span.end();
    }
    this.stack = [];
    this.finishCompaction();
    const exit = e ? str(e.exit_status) ?? 'unknown' : abandoned ?? 'abandoned';
    t.span.setAttributes(clean({
      [CAPSULE.TASK_EXIT_STATUS]: exit,
      [CAPSULE.TASK_TURNS]: num(e?.turns),
      [CAPSULE.TASK_REOPENS]: num(e?.reopen_count),
      [GEN_AI.USAGE_INPUT_TOKENS]: t.input,
      [GEN_AI.USAGE_OUTPUT_TOKENS]: t.output,
      [GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS]: t.cacheRead || undefined,
      [GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS]: t.cacheWrite || undefined,
    }));
    if (exit !== 'ok') {
      t.span.setAttribute(GEN_AI.ERROR_TYPE, exit);
      t.span.setStatus({ code: SpanStatusCode.ERROR, message: str(e?.reason) ?? exit });
    }
    t.span.end();
    this.task = undefined;
  }

  startChat(o: { model?: string; turn?: number; maxTokens?: number }): void {
    this.endChat('superseded');
    this.chat = this.tracer.startSpan(`chat ${o.model ?? this.info.model ?? ''}`.trim(), {
      kind: SpanKind.CLIENT,
      attributes: clean({
        [GEN_AI.OPERATION_NAME]: 'chat',
        [GEN_AI.PROVIDER_NAME]: this.info.provider,
        [GEN_AI.REQUEST_MODEL]: o.model ?? this.info.model,
        [GEN_AI.REQUEST_MAX_TOKENS]: o.maxTokens,
        [GEN_AI.CONVERSATION_ID]: this.task?.contextId,
        [CAPSULE.TURN]: o.turn,
      }),
    }, this.task?.ctx ?? ROOT_CONTEXT);
  }

  endChat(canceled?: string): void {
    if (!this.chat) return;
    if (canceled) this.chat.setStatus({ code: SpanStatusCode.ERROR, message: canceled });
    this.chat.end();
    this.chat = undefined;
  }

  /** An `inference` event: ends the open chat span, or (hook inference) records a finished one. */
  onInference(e: TraceEvent & { timestamp: number }): void {
    const origin = str(e.origin);
    let span = origin === undefined ? this.chat : undefined;
    if (span) this.chat = undefined;
    else {
      const model = str(e.model) ?? this.info.model;
      const dur = num(e.duration_ms) ?? 0;
      span = this.tracer.startSpan(`chat ${model ?? ''}`.trim(), {
        kind: SpanKind.CLIENT,
        startTime: e.timestamp - dur,
        attributes: clean({
          [GEN_AI.OPERATION_NAME]: 'chat',
          [GEN_AI.PROVIDER_NAME]: this.info.provider,
          [GEN_AI.REQUEST_MODEL]: model,
          [GEN_AI.CONVERSATION_ID]: this.task?.contextId,
          [CAPSULE.TURN]: num(e.turn),
          [CAPSULE.INFERENCE_ORIGIN]: origin,
          [CAPSULE.HOOK_NAME]: origin?.startsWith('hook:') ? origin.slice(5) : undefined,
        }),
      }, origin !== undefined ? this.parent() : this.task?.ctx ?? ROOT_CONTEXT);
    }
    const decision = str(e.decision);
    if (decision === 'error') {
      span.setAttributes(clean({ [GEN_AI.ERROR_TYPE]: 'driver_error', [CAPSULE.INFERENCE_DECISION]: decision, [CAPSULE.ESTIMATED_INPUT_TOKENS]: num(e.input_tokens) }));
      span.setStatus({ code: SpanStatusCode.ERROR, message: str(e.error) ?? 'inference failed' });
      span.end();
      return;
    }
    const u = normaliseUsage(e, this.info.provider);
    const stop = str(e.stop_reason);
    span.setAttributes(clean({
      [GEN_AI.USAGE_INPUT_TOKENS]: u.input,
      [GEN_AI.USAGE_OUTPUT_TOKENS]: u.output,
      [GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS]: u.cacheRead,
      [GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS]: u.cacheWrite,
      [CAPSULE.USAGE_SOURCE]: u.inputSource,
      [CAPSULE.ESTIMATED_INPUT_TOKENS]: num(e.input_tokens),
      [CAPSULE.ESTIMATED_OUTPUT_TOKENS]: num(e.output_tokens),
      [CAPSULE.INFERENCE_DECISION]: decision,
      [CAPSULE.INFERENCE_CONTINUED]: e.continued === true ? true : undefined,
      [GEN_AI.RESPONSE_FINISH_REASONS]: stop ? [stop] : undefined,
      // The driver's report exactly as the trace event records it (wit-interfaces.md: "on the
      // call's inference trace event and its span"): members it did not report stay absent.
      ...reportedAttributes(e.reported_usage),
    }));
    if (this.task) {
      this.task.input += u.input;
      this.task.output += u.output;
      this.task.cacheRead += u.cacheRead ?? 0;
      this.task.cacheWrite += u.cacheWrite ?? 0;
    }
    span.end();
  }

  finishCompaction(attrs?: Attributes): void {
    const c = this.compaction;
    if (!c) return;
    if (attrs) c.span.setAttributes(attrs);
    c.span.end();
    this.compaction = undefined;
  }

  onEvent(e: TraceEvent & { timestamp: number }): void {
    switch (e.event_type) {
      case 'task_start':
        this.startTask(e);
        return;
      case 'task_end':
        this.endTask(e);
        return;
      case 'inference':
        this.onInference(e);
        return;
      case 'tool_call': {
        const tool = this.openTool();
        tool?.setAttributes(clean({
          [CAPSULE.TOOL_INPUT_BYTES]: num(e.input_bytes),
          [CAPSULE.TOOL_OUTPUT_BYTES]: num(e.output_bytes),
          [CAPSULE.TOOL_STATE_EFFECT]: str(e.state_effect),
        }));
        return;
      }
      case 'shell': {
        const bin = str(e.binary);
        const dur = num(e.duration_ms) ?? 0;
        const span = this.tracer.startSpan(`shell ${bin ? basename(bin) : ''}`.trim(), {
          kind: SpanKind.INTERNAL,
          startTime: e.timestamp - dur,
          attributes: clean({
            [CAPSULE.SHELL_BINARY]: bin ? basename(bin) : undefined,
            [CAPSULE.SHELL_EXECUTABLE]: bin,
            [CAPSULE.SHELL_EXIT_CODE]: num(e.exit_code),
            [CAPSULE.SHELL_STDOUT_BYTES]: num(e.stdout_bytes),
            [CAPSULE.SHELL_STDERR_BYTES]: num(e.stderr_bytes),
            [CAPSULE.SHELL_TRUNCATED]: e.truncated === true ? true : undefined,
            [CAPSULE.TURN]: num(e.turn),
          }),
        }, this.openToolCtx() ?? this.parent());
        span.end(e.timestamp);
        return;
      }
      case 'call_denied': {
        const subject = str(e.tool_name) ?? (str(e.binary) ? basename(str(e.binary)!) : undefined);
        const span = this.tracer.startSpan(`call_denied${subject ? ` ${subject}` : ''}`, {
          kind: SpanKind.INTERNAL,
          attributes: clean({
            [CAPSULE.HOOK_NAME]: str(e.hook),
            [CAPSULE.DENIED_KIND]: str(e.kind),
            [CAPSULE.DENIED_REASON]: truncate(str(e.reason), 512),
            [CAPSULE.DENIED_FAIL_CLOSED]: e.fail_closed === true,
            [GEN_AI.TOOL_NAME]: subject,
            [CAPSULE.TURN]: num(e.turn),
          }),
          // Under the refused tool call itself (a sibling of the dispatch that decided it).
        }, this.openToolCtx() ?? this.parent());
        span.end();
        return;
      }
      case 'hook_call': {
        // One hook's call, after the fact: it spans the call's own time (duration_ms), under the
        // open `hook_dispatch <handler>` span for a blocking hook, under the task for an async one.
        const dur = num(e.duration_ms) ?? 0;
        const async = e.mode === 'async';
        const outcome = str(e.outcome) ?? 'none';
        const span = this.tracer.startSpan(`hook ${str(e.hook_name) ?? ''}`.trim(), {
          kind: SpanKind.INTERNAL,
          startTime: e.timestamp - dur,
          attributes: clean({
            [CAPSULE.HOOK_NAME]: str(e.hook_name),
            [CAPSULE.HOOK_HANDLER]: str(e.event),
            [CAPSULE.HOOK_MODE]: str(e.mode),
            [CAPSULE.HOOK_OUTCOME]: outcome,
            [CAPSULE.HOOK_DURATION_MS]: dur,
          }),
        }, async ? this.task?.ctx ?? ROOT_CONTEXT : this.parent());
        if (HOOK_FAULTS.has(outcome)) {
          span.setAttribute(GEN_AI.ERROR_TYPE, outcome);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end(e.timestamp);
        return;
      }
      case 'hook_dispatch_error': {
        const target = this.stack.at(-1)?.span ?? this.task?.span;
        target?.addEvent('hook_dispatch_error', clean({
          [CAPSULE.HOOK_NAME]: str(e.hook_name),
          [CAPSULE.HOOK_HANDLER]: str(e.event),
          'capsule.hook.arm': str(e.arm),
          'capsule.hook.detail': truncate(str(e.detail), 512),
        }));
        return;
      }
      case 'network_denied': {
        // On the tool (or driver) call that made the request, else the task.
        const m = /^([a-z]+):\/\/(.*):(\d+)$/.exec(str(e.destination) ?? '');
        (this.stack.at(-1)?.span ?? this.task?.span)?.addEvent('network_denied', clean({
          'capsule.component.kind': str(e.component_kind),
          'capsule.component.name': str(e.component),
          'url.scheme': m?.[1],
          'server.address': m?.[2],
          'server.port': m ? Number(m[3]) : undefined,
        }));
        return;
      }
      case 'spend_ceiling_reached':
        (this.stack.at(-1)?.span ?? this.task?.span)?.addEvent('spend_ceiling_reached', clean({
          'capsule.spend.requested': num(e.requested),
          'capsule.spend.spent': num(e.spent),
          'capsule.spend.limit': num(e.limit),
          [CAPSULE.INFERENCE_ORIGIN]: str(e.origin),
        }));
        return;
      case 'task_reopened':
        this.task?.span.addEvent('task_reopened', clean({ [CAPSULE.HOOK_NAME]: str(e.hook_name), 'capsule.task.reopen_number': num(e.reopen_number) }));
        return;
      case 'compaction':
        this.finishCompaction(clean({
          [CAPSULE.COMPACTION_OUTCOME]: 'replaced',
          [CAPSULE.HOOK_NAME]: str(e.hook),
          [CAPSULE.COMPACTION_TOKENS_AFTER]: num(e.tokens_after),
          [CAPSULE.COMPACTION_MESSAGES_AFTER]: num(e.messages_after),
        }));
        return;
      case 'compaction_refused':
        this.finishCompaction(clean({ [CAPSULE.COMPACTION_OUTCOME]: 'refused', [CAPSULE.HOOK_NAME]: str(e.hook), 'capsule.compaction.reason': truncate(str(e.reason), 512) }));
        return;
      case 'session_end':
        this.endTask(undefined, 'session_ended');
        return;
      default:
    }
  }

  openTool(): Span | undefined {
    for (let i = this.stack.length - 1; i >= 0; i--) if (this.stack[i]!.kind === 'tool') return this.stack[i]!.span;
    return undefined;
  }

  openToolCtx(): Context | undefined {
    for (let i = this.stack.length - 1; i >= 0; i--) if (this.stack[i]!.kind === 'tool') return this.stack[i]!.ctx;
    return undefined;
  }
}

const scopes = new WeakMap<TraceWriter, Scope>();

/**
 * Starts making spans for the session that writes `traceWriter`. Returns the detach function.
 * Attaching twice replaces the first scope.
 */
export function attachSpans(traceWriter: TraceWriter, info: SpanInfo): () => void {
  scopes.get(traceWriter)?.detach();
  const scope = new Scope(traceWriter, info, info.telemetry ?? currentTelemetry());
  scopes.set(traceWriter, scope);
  return () => {
    scope.endTask(undefined, 'detached');
    scope.detach();
    if (scopes.get(traceWriter) === scope) scopes.delete(traceWriter);
  };
}

// ---- calls made from runtime/loop ---------------------------------------------------------------

/** Opens the `chat <model>` span of one inference turn; the turn's `inference` event ends it. */
function startChatSpanUnguarded(traceWriter: TraceWriter, o: { model?: string; turn?: number; maxTokens?: number }): void {
  scopes.get(traceWriter)?.startChat(o);
}

export interface ToolSpan {
  /** The W3C traceparent of this span, to send on outgoing A2A calls made by the tool. */
  readonly traceparent: string | undefined;
  end(outcome: { status: 'ok' | 'error' | 'denied'; kind?: string; isError?: boolean } | { error: unknown }): void;
}

const NOOP_TOOL_SPAN: ToolSpan = { traceparent: undefined, end: () => {} };

/** Opens `execute_tool <name>` under the task span; end it with the dispatch outcome. */
function startToolSpanUnguarded(traceWriter: TraceWriter, o: { name: string; callId?: string; turn?: number; known?: boolean }): ToolSpan {
  const s = scopes.get(traceWriter);
  if (!s) return NOOP_TOOL_SPAN;
  const name = truncate(o.name, 64) ?? '';
  const span = s.tracer.startSpan(`execute_tool ${name}`, {
    kind: SpanKind.INTERNAL,
    attributes: clean({
      [GEN_AI.OPERATION_NAME]: 'execute_tool',
      [GEN_AI.TOOL_NAME]: name,
      [GEN_AI.TOOL_CALL_ID]: o.callId,
      [GEN_AI.TOOL_TYPE]: 'function',
      [GEN_AI.CONVERSATION_ID]: s.task?.contextId,
      [CAPSULE.TURN]: o.turn,
    }),
  }, s.task?.ctx ?? ROOT_CONTEXT);
  const open = s.push(span, 'tool', s.task?.ctx ?? ROOT_CONTEXT);
  let ended = false;
  return {
    traceparent: formatTraceparent(span.spanContext()),
    end(outcome) {
      if (ended) return;
      ended = true;
      s.pop(open);
      if ('error' in outcome) {
        span.setAttribute(GEN_AI.ERROR_TYPE, errorType(outcome.error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: describeError(outcome.error) });
      } else {
        span.setAttributes(clean({ [CAPSULE.TOOL_KIND]: outcome.kind, [CAPSULE.TOOL_STATUS]: outcome.status }));
        if (outcome.status !== 'ok' || outcome.isError) {
          span.setAttribute(GEN_AI.ERROR_TYPE, outcome.status === 'denied' ? 'denied' : 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.status === 'denied' ? 'denied by a policy hook' : 'the tool reported an error' });
        }
      }
      span.end();
    },
  };
}

export interface CompactionSpan {
  end(outcome: { kind: string; hook?: string; message?: string; reason?: string }): void;
}

const NOOP_COMPACTION_SPAN: CompactionSpan = { end: () => {} };

/**
 * Opens `compaction` around the on-compaction dispatch. `end` takes the dispatch outcome; a
 * `replaced` outcome stays open until the `compaction` / `compaction_refused` event that follows
 * it (so tokens_after lands on the span), closed at the latest when the task ends.
 */
function startCompactionSpanUnguarded(traceWriter: TraceWriter, o: { turn?: number; tokensBefore?: number; threshold?: number }): CompactionSpan {
  const s = scopes.get(traceWriter);
  if (!s) return NOOP_COMPACTION_SPAN;
  s.finishCompaction();
  const span = s.tracer.startSpan('compaction', {
    kind: SpanKind.INTERNAL,
    attributes: clean({ [CAPSULE.TURN]: o.turn, [CAPSULE.COMPACTION_TOKENS_BEFORE]: o.tokensBefore, [CAPSULE.COMPACTION_THRESHOLD]: o.threshold, [GEN_AI.CONVERSATION_ID]: s.task?.contextId }),
  }, s.task?.ctx ?? ROOT_CONTEXT);
  const open = s.push(span, 'compaction', s.task?.ctx ?? ROOT_CONTEXT);
  const c = { span, pending: false };
  s.compaction = c;
  return {
    end(outcome) {
      s.pop(open);
      span.setAttributes(clean({ [CAPSULE.COMPACTION_OUTCOME]: outcome.kind, [CAPSULE.HOOK_NAME]: outcome.hook }));
      if (outcome.kind === 'fatal') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message ?? 'compaction hook failed' });
      if (outcome.kind === 'replaced') {
        // Left open for the loop's `compaction` (or `compaction_refused`) trace event, which carries
        // tokens_after and messages_after; the loop counts those tokens asynchronously (the counter
        // runs in a worker), so no fixed delay would do. The task's end closes it at the latest.
        c.pending = true;
        return;
      }
      if (s.compaction === c) s.finishCompaction();
    },
  };
}

// ---- hook dispatch -----------------------------------------------------------------------------

export interface HookSpan {
  /**
   * `outcome`: the arm the hook returned (`none`, `deny`, `replace-context`, `seed-context`,
   * `reopen-task`, `artifact`, …) or the fault (`error`, `timeout`, `queue-overflow`,
   * `unhonored-arm`). A fault marks the span as an error; `detail` becomes its status message.
   */
  end(outcome: string, detail?: string): void;
}

const NOOP_HOOK_SPAN: HookSpan = { end: () => {} };
const HOOK_FAULTS = new Set(['error', 'timeout', 'queue-overflow', 'unhonored-arm', 'fault']);

/**
 * For the hook bus: one span per hook per dispatch, `hook <name>`, with the handler, the hook's
 * execution mode and the outcome. A blocking hook's span is the parent of what the hook causes
 * (its `run-inference` chat spans); an async hook's span hangs off the task span.
 */
function startHookSpanUnguarded(traceWriter: TraceWriter | undefined, o: { hook: string; handler: string; mode?: 'blocking' | 'async'; phase?: 'decision' | 'observation' }): HookSpan {
  const s = traceWriter ? scopes.get(traceWriter) : undefined;
  if (!s) return NOOP_HOOK_SPAN;
  const parent = o.mode === 'async' ? s.task?.ctx ?? ROOT_CONTEXT : s.parent();
  const span = s.tracer.startSpan(`hook ${o.hook}`, {
    kind: SpanKind.INTERNAL,
    attributes: clean({ [CAPSULE.HOOK_NAME]: o.hook, [CAPSULE.HOOK_HANDLER]: o.handler, [CAPSULE.HOOK_MODE]: o.mode, [CAPSULE.HOOK_PHASE]: o.phase }),
  }, parent);
  const open = o.mode === 'async' ? undefined : s.push(span, 'hook', parent);
  let ended = false;
  return {
    end(outcome, detail) {
      if (ended) return;
      ended = true;
      if (open) s.pop(open);
      span.setAttribute(CAPSULE.HOOK_OUTCOME, outcome);
      if (HOOK_FAULTS.has(outcome)) {
        span.setAttribute(GEN_AI.ERROR_TYPE, outcome);
        span.setStatus({ code: SpanStatusCode.ERROR, ...(detail ? { message: truncate(detail, 512)! } : {}) });
      }
      span.end();
    },
  };
}

/** Opens `hook_dispatch <handler>` (one per dispatch of a handler to all bound hooks). */
function startHandlerSpanUnguarded(traceWriter: TraceWriter, o: { handler: string; phase?: 'decision' | 'observation' }): HookSpan {
  const s = scopes.get(traceWriter);
  if (!s) return NOOP_HOOK_SPAN;
  const span = s.tracer.startSpan(`hook_dispatch ${o.handler}`, {
    kind: SpanKind.INTERNAL,
    attributes: clean({ [CAPSULE.HOOK_HANDLER]: o.handler, [CAPSULE.HOOK_PHASE]: o.phase }),
  }, s.parent());
  const open = s.push(span, 'handler');
  let ended = false;
  return {
    end(outcome, detail) {
      if (ended) return;
      ended = true;
      s.pop(open);
      span.setAttribute(CAPSULE.HOOK_OUTCOME, outcome);
      if (HOOK_FAULTS.has(outcome)) {
        span.setAttribute(GEN_AI.ERROR_TYPE, outcome);
        span.setStatus({ code: SpanStatusCode.ERROR, ...(detail ? { message: truncate(detail, 512)! } : {}) });
      }
      span.end();
    },
  };
}

/**
 * The traceparent of the innermost open span of the session — a tool call, else the task — for an
 * outgoing A2A call made by code with no span at hand (a script capsule's message/send).
 */
export function currentTraceparent(traceWriter: TraceWriter): string | undefined {
  const s = scopes.get(traceWriter);
  if (!s) return undefined;
  return formatTraceparent(trace.getSpan(s.parent())?.spanContext());
}

/** The traceparent of the session's open tool span (for code that has no ToolSpan at hand). */
export function currentToolTraceparent(traceWriter: TraceWriter): string | undefined {
  const s = scopes.get(traceWriter);
  const t = s?.openTool();
  return t ? formatTraceparent(t.spanContext()) : undefined;
}

// ---- guarded entry points ----------------------------------------------------------------------
// Telemetry must never break the session: a throw inside the SDK costs the span, not the call.

function guard<T>(f: () => T, fallback: T): T {
  try {
    return f();
  } catch {
    return fallback;
  }
}

function guardEnd<T extends { end(...a: never[]): void }>(h: T): T {
  const end = h.end.bind(h) as (...a: unknown[]) => void;
  return { ...h, end: (...a: unknown[]) => guard(() => end(...a), undefined) } as T;
}

/** Opens the `chat <model>` span of one inference turn; the turn's `inference` event ends it. */
export function startChatSpan(traceWriter: TraceWriter, o: { model?: string; turn?: number; maxTokens?: number }): void {
  guard(() => startChatSpanUnguarded(traceWriter, o), undefined);
}

/** Opens `execute_tool <name>` under the task span; end it with the dispatch outcome. */
export function startToolSpan(traceWriter: TraceWriter, o: { name: string; callId?: string; turn?: number; known?: boolean }): ToolSpan {
  return guard(() => guardEnd(startToolSpanUnguarded(traceWriter, o)), NOOP_TOOL_SPAN);
}

/** Opens `compaction` around the on-compaction dispatch (see startCompactionSpanUnguarded). */
export function startCompactionSpan(traceWriter: TraceWriter, o: { turn?: number; tokensBefore?: number; threshold?: number }): CompactionSpan {
  return guard(() => guardEnd(startCompactionSpanUnguarded(traceWriter, o)), NOOP_COMPACTION_SPAN);
}

/** For the hook bus: `hook <name>` per hook per dispatch (see startHookSpanUnguarded). */
export function startHookSpan(traceWriter: TraceWriter | undefined, o: { hook: string; handler: string; mode?: 'blocking' | 'async'; phase?: 'decision' | 'observation' }): HookSpan {
  return guard(() => guardEnd(startHookSpanUnguarded(traceWriter, o)), NOOP_HOOK_SPAN);
}

/** `hook_dispatch <handler>` (one per dispatch of a handler to all bound hooks). */
export function startHandlerSpan(traceWriter: TraceWriter, o: { handler: string; phase?: 'decision' | 'observation' }): HookSpan {
  return guard(() => guardEnd(startHandlerSpanUnguarded(traceWriter, o)), NOOP_HOOK_SPAN);
}

// ---- helpers -----------------------------------------------------------------------------------

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function truncate(s: string | undefined, n: number): string | undefined {
  if (s === undefined) return undefined;
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

function clean(a: Record<string, string | number | boolean | string[] | undefined>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(a)) if (v !== undefined) out[k] = v;
  return out;
}

function errorType(e: unknown): string {
  if (e && typeof e === 'object' && 'name' in e && typeof (e as { name: unknown }).name === 'string') return (e as { name: string }).name;
  return 'Error';
}

function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** `capsule.reported.<member>` for each well-formed member of an inference event's reported_usage. */
function reportedAttributes(v: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (!v || typeof v !== 'object') return out;
  for (const k of ['input_tokens', 'output_tokens', 'cached_tokens', 'cache_write_tokens']) {
    const n = (v as Record<string, unknown>)[k];
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0) out[`capsule.reported.${k}`] = n;
  }
  return out;
}
