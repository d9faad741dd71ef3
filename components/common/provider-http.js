// Shared by the inference drivers (driver-anthropic, driver-openai): the HTTP call with retries and
// the tool-result shapes every driver answers with. Bundled into each driver by the component build
// (test/fixtures/build.ts: `"bundle": true` in fixture.json; this file is part of each driver's
// cache key), since a component is one module: this is a build-time dependency, not a runtime one.
//
// Provider faults. Retries live here, in the driver: it holds the whole request body and sees the
// status and Retry-After before any answer reaches the runtime, so a retry replays exactly what
// was sent; a replay in the host's wasi:http handler would have to buffer the body the guest
// streams into it and hide responses the guest already holds a future for. Every attempt is
// reported back in `attempts` and the runtime writes each to the trace.
const ERROR_BODY_MAX = 512; // provider error bodies are cut to this before answers and traces
const RETRY_CAP_MS = 30_000;

export function cut(s) {
  s = String(s ?? '');
  return s.length > ERROR_BODY_MAX ? `${s.slice(0, ERROR_BODY_MAX)}… (${s.length - ERROR_BODY_MAX} more characters cut)` : s;
}

// Retry-After: delta-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unreadable.
export function retryAfterMs(v) {
  if (v === null || v === undefined || v === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

export const retryable = (status) => status === 429 || (status >= 500 && status <= 599);

// Exponential backoff with full jitter in [base·2^(n-1)/2, base·2^(n-1)], capped; Retry-After wins.
export function backoffMs(config, attempt, retryAfter) {
  if (retryAfter !== undefined) return Math.min(retryAfter, RETRY_CAP_MS);
  const base = Number.isFinite(config.retry_base_ms) ? config.retry_base_ms : 500;
  const top = Math.min(base * 2 ** (attempt - 1), RETRY_CAP_MS);
  return Math.round(top / 2 + Math.random() * (top / 2));
}

// POSTs with retries; resolves {res, text, attempts} or {failure, attempts}.
export async function postWithRetries(url, init, config) {
  const max = Number.isInteger(config.max_attempts) && config.max_attempts >= 1 ? config.max_attempts : 3;
  const attempts = [];
  for (let n = 1; ; n++) {
    let res;
    let text;
    try {
      res = await fetch(url, init);
      text = await res.text();
    } catch (err) {
      const a = { attempt: n, error: cut(`connection failed: ${err.message}`) };
      attempts.push(a);
      if (n >= max) return { failure: `cannot reach ${url} after ${n} attempt(s): ${a.error}`, attempts };
      a.delay_ms = backoffMs(config, n);
      await new Promise((r) => setTimeout(r, a.delay_ms));
      continue;
    }
    if (res.ok) {
      attempts.push({ attempt: n, status: res.status });
      return { res, text, attempts };
    }
    const a = { attempt: n, status: res.status, error: cut(text) };
    const ra = retryAfterMs(res.headers.get('retry-after'));
    if (ra !== undefined) a.retry_after_ms = ra;
    attempts.push(a);
    if (!retryable(res.status) || n >= max) {
      const tried = retryable(res.status) ? ` after ${n} attempt(s)` : '';
      return { failure: `provider answered HTTP ${res.status}${tried}: ${cut(text)}`, attempts };
    }
    a.delay_ms = backoffMs(config, n, ra);
    await new Promise((r) => setTimeout(r, a.delay_ms));
  }
}

export function textOf(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter((b) => b.type === 'text').map((b) => b.text).join('');
}


export function result(body, metadata = []) {
  const failed = body.stop_reason === 'error';
  return { status: failed ? 'error' : 'passed', summary: failed ? body.error : undefined, data: JSON.stringify(body), dataPath: undefined, truncated: false, metadata };
}

// The attempts go back only when there was more than one (a retry happened).
export function withAttempts(body, attempts) {
  if (attempts && attempts.length > 1) body.attempts = attempts;
  return body;
}

export function failure(message, attempts) {
  return result(attempts ? { stop_reason: 'error', content: [], error: cut(message), attempts } : { stop_reason: 'error', content: [], error: cut(message) });
}

