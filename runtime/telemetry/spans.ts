/**
 * Session spans, with the OpenTelemetry GenAI semantic conventions (attribute names in semconv.ts,
 * the traceparent parser in traceparent.ts, usage normalisation in usage.ts). This file is the entry
 * the loop, the hook bus and the CLI call; the per-session state is span-scope.ts, the spans made
 * from trace events span-events.ts, the spans opened around running work span-handles.ts.
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
import { trace } from '@opentelemetry/api';
import type { TraceWriter } from '../trace/writer.ts';
import { currentTelemetry } from './telemetry-handle.ts';
import { formatTraceparent } from './traceparent.ts';
import { spanFromEvent } from './span-events.ts';
import {
  NOOP_COMPACTION_SPAN,
  NOOP_HOOK_SPAN,
  NOOP_TOOL_SPAN,
  openCompactionSpan,
  openHandlerSpan,
  openHookSpan,
  openToolSpan,
  type CompactionSpan,
  type HookSpan,
  type ToolSpan,
} from './span-handles.ts';
import { Scope, type SpanInfo } from './span-scope.ts';

export { CAPSULE, GEN_AI, providerFromDriver } from './semconv.ts';
export { formatTraceparent, parseTraceparent } from './traceparent.ts';
export { normaliseUsage, type NormalisedUsage } from './usage.ts';
export type { CompactionSpan, HookSpan, ToolSpan } from './span-handles.ts';
export type { SpanInfo } from './span-scope.ts';

const scopes = new WeakMap<TraceWriter, Scope>();

/**
 * Starts making spans for the session that writes `traceWriter`. Returns the detach function.
 * Attaching twice replaces the first scope.
 */
export function attachSpans(traceWriter: TraceWriter, info: SpanInfo): () => void {
  scopes.get(traceWriter)?.detach();
  const scope = new Scope(info, info.telemetry ?? currentTelemetry());
  scope.detach = traceWriter.onEvent((e) => spanFromEvent(scope, e));
  scopes.set(traceWriter, scope);
  return () => {
    scope.endTask(undefined, 'detached');
    scope.detach();
    if (scopes.get(traceWriter) === scope) scopes.delete(traceWriter);
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
  guard(() => scopes.get(traceWriter)?.startChat(o), undefined);
}

/** Opens `execute_tool <name>` under the task span; end it with the dispatch outcome. */
export function startToolSpan(traceWriter: TraceWriter, o: { name: string; callId?: string; turn?: number; known?: boolean }): ToolSpan {
  return guard(() => guardEnd(openToolSpan(scopes.get(traceWriter), o)), NOOP_TOOL_SPAN);
}

/** Opens `compaction` around the on-compaction dispatch (see openCompactionSpan). */
export function startCompactionSpan(traceWriter: TraceWriter, o: { turn?: number; tokensBefore?: number; threshold?: number }): CompactionSpan {
  return guard(() => guardEnd(openCompactionSpan(scopes.get(traceWriter), o)), NOOP_COMPACTION_SPAN);
}

/** For the hook bus: `hook <name>` per hook per dispatch (see openHookSpan). */
export function startHookSpan(
  traceWriter: TraceWriter | undefined,
  o: { hook: string; handler: string; mode?: 'blocking' | 'async'; phase?: 'decision' | 'observation' },
): HookSpan {
  return guard(() => guardEnd(openHookSpan(traceWriter ? scopes.get(traceWriter) : undefined, o)), NOOP_HOOK_SPAN);
}

/** `hook_dispatch <handler>` (one per dispatch of a handler to all bound hooks). */
export function startHandlerSpan(traceWriter: TraceWriter, o: { handler: string; phase?: 'decision' | 'observation' }): HookSpan {
  return guard(() => guardEnd(openHandlerSpan(scopes.get(traceWriter), o)), NOOP_HOOK_SPAN);
}
