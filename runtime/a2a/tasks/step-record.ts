/**
 * The bound on one `step` artifact's record (executor-events.ts). A step is a trace record, and a
 * trace record can be large: a shell call's whole script, a tool's input and output when the
 * capsule traces tool output. A stream reader wants the step, not the payload, so each string is
 * cut and each nested value that is too big is replaced by a note of its size; the fields a step
 * line reads (names, numbers, reasons) stay whole up to the string bound.
 */

/** Characters of one string field kept; the rest is replaced by a note. */
export const MAX_STEP_STRING = 1024;
/** Bytes of JSON of one nested object or array kept; a bigger one becomes a note. */
export const MAX_STEP_NESTED = 2048;
/** Fields kept of one record; past it the rest are dropped (a trace record has a few dozen). */
export const MAX_STEP_FIELDS = 64;

export function boundedStep(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let n = 0;
  // for…in over own keys, not Object.entries: no array of pairs per step (a step per trace record).
  for (const k in record) {
    if (!Object.hasOwn(record, k)) continue;
    if (++n > MAX_STEP_FIELDS) break;
    out[k] = boundedValue(record[k]);
  }
  return out;
}

function boundedValue(v: unknown): unknown {
  if (typeof v === 'string') {
    return v.length > MAX_STEP_STRING ? `${v.slice(0, MAX_STEP_STRING)}… [${v.length - MAX_STEP_STRING} more characters]` : v;
  }
  if (v === null || typeof v !== 'object') return v;
  const json = JSON.stringify(v) ?? '';
  if (json.length <= MAX_STEP_NESTED) return v;
  return `[${Array.isArray(v) ? 'array' : 'object'} of ${json.length} bytes of JSON, not streamed]`;
}
