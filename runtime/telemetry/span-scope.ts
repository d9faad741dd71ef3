/**
 * The span state of one session: its open task span, the stack of open tool / compaction / hook
 * spans (the parent of whatever starts next), the open chat span and a compaction awaiting its
 * outcome. Parents are explicit contexts kept here, never ambient async context.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { TraceEvent } from '../trace/writer.ts';
import type { Telemetry } from './telemetry-handle.ts';
import { CAPSULE, GEN_AI } from './semconv.ts';
import { parseTraceparent } from './traceparent.ts';
import { normaliseUsage } from './usage.ts';
import { clean, num, reportedAttributes, str } from './span-attrs.ts';

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

export interface Open {
  span: Span;
  ctx: Context;
  kind: 'tool' | 'compaction' | 'handler' | 'hook';
}

export interface TaskScope {
  span: Span;
  ctx: Context;
  contextId: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export class Scope {
  task: TaskScope | undefined;
  stack: Open[] = [];
  chat: Span | undefined;
  compaction: { span: Span; pending: boolean } | undefined;
  /** Stops listening to the session's trace (set by attachSpans, which subscribes the scope). */
  detach: () => void = () => {};

  constructor(
    readonly info: SpanInfo,
    readonly telemetry: Telemetry,
  ) {}

  get tracer() {
    return this.telemetry.tracer;
  }

  /**
   * Whether spans are recorded. Off (no exporter: `mur serve`'s default), every span is a
   * non-recording one that drops what it is given: the task span is still made, since it carries
   * the caller's trace context to what the task calls (traceparent), but its attributes and the
   * chat spans are not, which no one would see (a one-turn task built 5 attribute objects and 2
   * spans on the serving process's main thread, issue 42).
   */
  get recording(): boolean {
    return this.telemetry.enabled;
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
    const span = this.tracer.startSpan(
      `invoke_agent ${this.info.capsule}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: this.recording ? this.taskAttributes(e, contextId) : undefined,
      },
      parent,
    );
    this.task = { span, ctx: trace.setSpan(parent, span), contextId, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  }

  private taskAttributes(e: TraceEvent, contextId: string): Attributes {
    return clean({
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
    });
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
    this.task = undefined;
    if (!this.recording) {
      t.span.end();
      return;
    }
    const exit = e ? (str(e.exit_status) ?? 'unknown') : (abandoned ?? 'abandoned');
    t.span.setAttributes(
      clean({
        [CAPSULE.TASK_EXIT_STATUS]: exit,
        [CAPSULE.TASK_TURNS]: num(e?.turns),
        [CAPSULE.TASK_REOPENS]: num(e?.reopen_count),
        [GEN_AI.USAGE_INPUT_TOKENS]: t.input,
        [GEN_AI.USAGE_OUTPUT_TOKENS]: t.output,
        [GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS]: t.cacheRead || undefined,
        [GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS]: t.cacheWrite || undefined,
      }),
    );
    if (exit !== 'ok') {
      t.span.setAttribute(GEN_AI.ERROR_TYPE, exit);
      t.span.setStatus({ code: SpanStatusCode.ERROR, message: str(e?.reason) ?? exit });
    }
    t.span.end();
  }

  startChat(o: { model?: string; turn?: number; maxTokens?: number }): void {
    this.endChat('superseded');
    // A chat span is never a parent: off, it would be made and dropped for nothing.
    if (!this.recording) return;
    this.chat = this.tracer.startSpan(
      `chat ${o.model ?? this.info.model ?? ''}`.trim(),
      {
        kind: SpanKind.CLIENT,
        attributes: clean({
          [GEN_AI.OPERATION_NAME]: 'chat',
          [GEN_AI.PROVIDER_NAME]: this.info.provider,
          [GEN_AI.REQUEST_MODEL]: o.model ?? this.info.model,
          [GEN_AI.REQUEST_MAX_TOKENS]: o.maxTokens,
          [GEN_AI.CONVERSATION_ID]: this.task?.contextId,
          [CAPSULE.TURN]: o.turn,
        }),
      },
      this.task?.ctx ?? ROOT_CONTEXT,
    );
  }

  endChat(canceled?: string): void {
    if (!this.chat) return;
    if (canceled) this.chat.setStatus({ code: SpanStatusCode.ERROR, message: canceled });
    this.chat.end();
    this.chat = undefined;
  }

  /** An `inference` event: ends the open chat span, or (hook inference) records a finished one. */
  onInference(e: TraceEvent & { timestamp: number }): void {
    // Off, no chat span was opened, and the usage summed here only feeds the task span's attributes.
    if (!this.recording) return;
    const origin = str(e.origin);
    let span = origin === undefined ? this.chat : undefined;
    if (span) this.chat = undefined;
    else {
      const model = str(e.model) ?? this.info.model;
      const dur = num(e.duration_ms) ?? 0;
      span = this.tracer.startSpan(
        `chat ${model ?? ''}`.trim(),
        {
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
        },
        origin !== undefined ? this.parent() : (this.task?.ctx ?? ROOT_CONTEXT),
      );
    }
    const decision = str(e.decision);
    if (decision === 'error') {
      span.setAttributes(
        clean({ [GEN_AI.ERROR_TYPE]: 'driver_error', [CAPSULE.INFERENCE_DECISION]: decision, [CAPSULE.ESTIMATED_INPUT_TOKENS]: num(e.input_tokens) }),
      );
      span.setStatus({ code: SpanStatusCode.ERROR, message: str(e.error) ?? 'inference failed' });
      span.end();
      return;
    }
    const u = normaliseUsage(e, this.info.provider);
    const stop = str(e.stop_reason);
    span.setAttributes(
      clean({
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
      }),
    );
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

  openTool(): Span | undefined {
    for (let i = this.stack.length - 1; i >= 0; i--) if (this.stack[i]!.kind === 'tool') return this.stack[i]!.span;
    return undefined;
  }

  openToolCtx(): Context | undefined {
    for (let i = this.stack.length - 1; i >= 0; i--) if (this.stack[i]!.kind === 'tool') return this.stack[i]!.ctx;
    return undefined;
  }
}
