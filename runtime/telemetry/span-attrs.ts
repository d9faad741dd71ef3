/**
 * Small helpers the span files share: reading a trace event's loosely typed fields, dropping unset
 * attributes, naming an error, and the hook outcomes that mark a span as failed.
 */
import type { Attributes } from '@opentelemetry/api';

/** Hook outcomes that are faults: the span is an error. */
export const HOOK_FAULTS: ReadonlySet<string> = new Set(['error', 'timeout', 'queue-overflow', 'unhonored-arm', 'fault']);

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function truncate(s: string | undefined, n: number): string | undefined {
  if (s === undefined) return undefined;
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

export function clean(a: Record<string, string | number | boolean | string[] | undefined>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(a)) if (v !== undefined) out[k] = v;
  return out;
}

export function errorType(e: unknown): string {
  if (e && typeof e === 'object' && 'name' in e && typeof (e as { name: unknown }).name === 'string') return (e as { name: string }).name;
  return 'Error';
}

export function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** `capsule.reported.<member>` for each well-formed member of an inference event's reported_usage. */
export function reportedAttributes(v: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (!v || typeof v !== 'object') return out;
  for (const k of ['input_tokens', 'output_tokens', 'cached_tokens', 'cache_write_tokens']) {
    const n = (v as Record<string, unknown>)[k];
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0) out[`capsule.reported.${k}`] = n;
  }
  return out;
}
