/**
 * The secrets the runtime holds, and the one redaction every sink applies to what it writes or
 * answers (docs/runtime.md#secrets).
 *
 * Each secret is registered where the runtime reads it (the provider key, an OCI password, a store
 * URL's password, a peer's or a push webhook's token); the sinks — the `trace.jsonl` writer (and
 * so the metrics and spans fed from it), the A2A task events and outcomes, the span exporter,
 * `/metrics`, the lines `mur` prints — pass their text through {@link redact}, which replaces every
 * occurrence of a secret, URL-encoded or JSON-escaped as well as verbatim, with {@link REDACTED}.
 * Why at the sinks and not where errors are made: a secret reaches text from places the runtime
 * does not write itself (a provider's error body quoting the key, a webhook echoing its token,
 * a library's error message), and a sink sees all of them.
 *
 * Values shorter than {@link MIN_SECRET_LENGTH} are not registered: replacing every 1–3 character
 * run that happens to equal one would garble every answer, and such a value is no secret anyway.
 */

export const REDACTED = '[redacted]';
export const MIN_SECRET_LENGTH = 4;

/** Registered secrets, each with how many holders hold it (a token several configs share). */
const held = new Map<string, number>();
/** All forms of all secrets, longest first, as one alternation; undefined when none is held. */
let pattern: RegExp | undefined;
let stale = false;

/** The forms a secret may take in text: verbatim, URL-encoded, JSON-escaped (once and twice). */
function forms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const all = new Set([secret, encodeURIComponent(secret), json, JSON.stringify(json).slice(1, -1)]);
  return [...all];
}

function compiled(): RegExp | undefined {
  if (!stale) return pattern;
  stale = false;
  const all = [...held.keys()].flatMap(forms).sort((a, b) => b.length - a.length);
  // Longest first: a JSON-escaped form containing the verbatim one is replaced whole.
  pattern = all.length === 0 ? undefined : new RegExp(all.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return pattern;
}

/**
 * Holds `value` as a secret until the returned release is called (never, for the runtime's own
 * key). A value held twice stays held until both release it. Undefined, empty and too-short values
 * are ignored (the release does nothing).
 */
export function holdSecret(value: string | undefined): () => void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH) return () => {};
  held.set(value, (held.get(value) ?? 0) + 1);
  stale = true;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (held.get(value) ?? 1) - 1;
    if (n > 0) held.set(value, n);
    else held.delete(value);
    stale = true;
  };
}

/** Whether any secret is held (the sinks' fast path). */
export function holdsSecrets(): boolean {
  return held.size > 0;
}

/** `text` with every held secret (in each of its forms) replaced by {@link REDACTED}. */
export function redact(text: string): string {
  const p = compiled();
  if (p === undefined) return text;
  p.lastIndex = 0;
  return p.test(text) ? text.replace(p, REDACTED) : text;
}

/**
 * `value` with {@link redact} applied to every string in it (object keys included), as a new
 * value; the same value when it holds no secret. Plain data only: JSON-like objects and arrays.
 */
export function redactDeep<T>(value: T): T {
  if (compiled() === undefined) return value;
  return walk(value, new WeakSet()) as T;
}

function walk(v: unknown, seen: WeakSet<object>): unknown {
  if (typeof v === 'string') return redact(v);
  if (v === null || typeof v !== 'object' || seen.has(v)) return v;
  seen.add(v);
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    v.forEach((x, i) => {
      const r = walk(x, seen);
      if (r !== x) (out ??= v.slice())[i] = r;
    });
    return out ?? v;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return v; // class instances (Buffers, Dates…) pass as they are
  let out: Record<string, unknown> | undefined;
  // for…in over own keys, not Object.entries: no array of pairs per object walked (every step record
  // of a task is walked while a secret is held).
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    const x = (v as Record<string, unknown>)[k];
    const rk = redact(k);
    const r = walk(x, seen);
    if (r !== x || rk !== k) {
      out ??= { ...(v as Record<string, unknown>) };
      if (rk !== k) delete out[k];
      out[rk] = r;
    }
  }
  return out ?? v;
}
