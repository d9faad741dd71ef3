/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/): the ONE parser
 * of the runtime, used by the A2A intake (a caller's header) and by the spans (the parent of a
 * task's `invoke_agent`). The field grammar is that of @opentelemetry/core's parseTraceParent
 * (version `ff` invalid; version `00` exactly four fields; a higher version parsed by its first four
 * fields and free to append more, as the spec asks of a receiver; test/telemetry/traceparent.test.ts
 * holds the two to the same answers). Around it: surrounding space trimmed, case folded, all-zero
 * ids refused (isSpanContextValid), only the sampled flag kept.
 *
 * Why not import the library's function: @opentelemetry/core's index loads the semantic
 * conventions with it — hundreds of exported constants behind getters, ≈ 1.2 MiB of the heap of
 * every serving process for one regular expression (measured on Node 24: core's index +1.75 MiB of
 * heap after a GC, the API alone +0.5) — and reaching the function alone would mean importing a
 * file of the package's private build/ layout. The OTLP exporter (otel-sdk.ts, loaded only with an
 * endpoint) still uses the library.
 */
import { TraceFlags, isSpanContextValid, type SpanContext } from '@opentelemetry/api';

/** version-traceid-parentid-flags, lower-case hex; a version other than 00 may carry more fields after. */
const FIELDS = /^\s?([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\s?$/;

function parseFields(v: string): { traceId: string; spanId: string; traceFlags: number } | null {
  const m = FIELDS.exec(v);
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined)) return null;
  if (/^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return null;
  return { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) };
}

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
