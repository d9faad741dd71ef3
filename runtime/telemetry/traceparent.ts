/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/): the ONE parser
 * of the runtime, used by the A2A intake (a caller's header) and by the spans (the parent of a
 * task's `invoke_agent`). The field grammar is @opentelemetry/core's parseTraceParent (version `ff`
 * invalid; version `00` exactly four fields; a higher version parsed by its first four fields and
 * free to append more, as the spec asks of a receiver). Around it: surrounding space trimmed, case
 * folded, all-zero ids refused (isSpanContextValid), only the sampled flag kept.
 */
import { TraceFlags, isSpanContextValid, type SpanContext } from '@opentelemetry/api';
import { parseTraceParent as parseFields } from '@opentelemetry/core';

/** A remote SpanContext from a W3C `traceparent`, or undefined when it is absent or malformed. */
export function parseTraceparent(v: string | undefined): SpanContext | undefined {
  const f = v ? parseFields(v.trim().toLowerCase()) : null;
  if (!f) return undefined;
  const sc: SpanContext = { traceId: f.traceId, spanId: f.spanId, traceFlags: f.traceFlags & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/** `00-<trace-id>-<span-id>-<flags>` for a span, or undefined when its context is not valid. */
export function formatTraceparent(sc: SpanContext | undefined): string | undefined {
  if (!sc || !isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & TraceFlags.SAMPLED).toString(16)}`;
}

/**
 * A caller's `traceparent` header (first value if repeated), trimmed and lower-cased, when it is
 * well-formed by parseTraceparent; else undefined (the task then starts a trace of its own).
 */
export function validTraceparent(v: string | string[] | undefined): string | undefined {
  const s = (Array.isArray(v) ? v[0] : v)?.trim().toLowerCase();
  return s && parseTraceparent(s) ? s : undefined;
}
