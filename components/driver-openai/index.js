// Inference driver for the OpenAI Chat Completions API.
//
//   env  MURMUR_INFERENCE_ENDPOINT (required; posts to <endpoint>/chat/completions when it ends in a
//        version segment such as /v1, else to <endpoint>/v1/chat/completions as the reference
//        runtime's driver does — so https://api.openai.com and https://api.openai.com/v1 both work),
//        MURMUR_INFERENCE_API_KEY (optional; Authorization: Bearer), MURMUR_INFERENCE_DRIVER_CONFIG
//        (optional JSON: max_tokens_field "max_tokens" for servers without max_completion_tokens)
//   in   tool-input.data = {model, max_tokens, messages, tools, params, system, continuation_id?, prompt_cache_key}
//   out  tool-result.data = {stop_reason, content, usage?, error?}
// `prompt_cache_key` is forwarded: Chat Completions defines a field of that name for cache routing.
import { getEnvironment } from 'wasi:cli/environment@0.2.12';
import { emitChunk, emitThinkingChunk } from 'murmur:text/chunks@0.1.0';


// Provider faults. Retries live here, in the driver: it holds the whole request body and sees the
// status and Retry-After before any answer reaches the runtime, so a retry replays exactly what
// was sent; a replay in the host's wasi:http handler would have to buffer the body the guest
// streams into it and hide responses the guest already holds a future for. Every attempt is
// reported back in `attempts` and the runtime writes each to the trace.
const ERROR_BODY_MAX = 512; // provider error bodies are cut to this before answers and traces
const RETRY_CAP_MS = 30_000;

function cut(s) {
  s = String(s ?? '');
  return s.length > ERROR_BODY_MAX ? `${s.slice(0, ERROR_BODY_MAX)}… (${s.length - ERROR_BODY_MAX} more characters cut)` : s;
}

// Retry-After: delta-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unreadable.
function retryAfterMs(v) {
  if (v === null || v === undefined || v === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

const retryable = (status) => status === 429 || (status >= 500 && status <= 599);

// Exponential backoff with full jitter in [base·2^(n-1)/2, base·2^(n-1)], capped; Retry-After wins.
function backoffMs(config, attempt, retryAfter) {
  if (retryAfter !== undefined) return Math.min(retryAfter, RETRY_CAP_MS);
  const base = Number.isFinite(config.retry_base_ms) ? config.retry_base_ms : 500;
  const top = Math.min(base * 2 ** (attempt - 1), RETRY_CAP_MS);
  return Math.round(top / 2 + Math.random() * (top / 2));
}

// POSTs with retries; resolves {res, text, attempts} or {failure, attempts}.
async function postWithRetries(url, init, config) {
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

const STOP = { stop: 'end_turn', tool_calls: 'tool_call', function_call: 'tool_call', length: 'max_tokens', content_filter: 'end_turn' };

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter((b) => b.type === 'text').map((b) => b.text).join('');
}

function toOpenAiMessages(system, messages) {
  const out = [];
  if (system) out.push({ role: 'system', content: system });
  for (const m of messages) {
    if (m.role === 'tool') {
      out.push({ role: 'tool', tool_call_id: m.tool_call_id, content: textOf(m.content) });
      continue;
    }
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content || [];
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const calls = blocks.filter((b) => b.type === 'tool_call').map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }));
    if (m.role === 'assistant') {
      const msg = { role: 'assistant', content: text || null };
      if (calls.length) msg.tool_calls = calls;
      out.push(msg);
    } else {
      out.push({ role: 'user', content: text });
    }
  }
  return out;
}

function usageOf(u) {
  if (!u || typeof u !== 'object') return undefined;
  const out = {};
  const put = (k, v) => { if (Number.isInteger(v) && v >= 0) out[k] = v; };
  put('input_tokens', u.prompt_tokens);
  put('output_tokens', u.completion_tokens);
  if (u.prompt_tokens_details) put('cached_tokens', u.prompt_tokens_details.cached_tokens);
  return Object.keys(out).length ? out : undefined;
}

function fromChoice(choice, usage) {
  const msg = (choice && choice.message) || {};
  const content = [];
  if (msg.content) content.push({ type: 'text', text: msg.content });
  for (const c of msg.tool_calls || []) {
    let args = {};
    try { args = c.function.arguments ? JSON.parse(c.function.arguments) : {}; } catch { args = { _unparsed: c.function.arguments }; }
    content.push({ type: 'tool_call', id: c.id, name: c.function.name, input: args });
  }
  return { stop_reason: STOP[choice && choice.finish_reason] ?? 'end_turn', content, usage: usageOf(usage) };
}

function fromSse(text) {
  const message = { content: '', tool_calls: [] };
  let finish;
  let usage;
  let done = false;
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '[DONE]') done = true;
    if (!data || data === '[DONE]') continue;
    let ev;
    try { ev = JSON.parse(data); } catch { continue; }
    if (ev.error) throw new Error(`provider stream error: ${cut(JSON.stringify(ev.error))}`);
    if (ev.usage) usage = ev.usage;
    for (const ch of ev.choices || []) {
      const d = ch.delta || {};
      if (d.content) { message.content += d.content; emitChunk(d.content); }
      if (d.reasoning_content) emitThinkingChunk(d.reasoning_content);
      for (const tc of d.tool_calls || []) {
        const slot = (message.tool_calls[tc.index ?? 0] ||= { id: '', type: 'function', function: { name: '', arguments: '' } });
        if (tc.id) slot.id = tc.id;
        if (tc.function && tc.function.name) slot.function.name += tc.function.name;
        if (tc.function && tc.function.arguments) slot.function.arguments += tc.function.arguments;
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  // A stream cut before its final event (no finish_reason, no [DONE]) holds a partial answer: a
  // failed call, never a completed one. (A cut after the finish chunk loses only the usage chunk.)
  if (!done && !finish) throw new Error('the provider stream ended before its finish_reason chunk and [DONE] (connection cut mid-answer)');
  message.tool_calls = message.tool_calls.filter(Boolean);
  return fromChoice({ message, finish_reason: finish }, usage);
}

function result(body, metadata = []) {
  const failed = body.stop_reason === 'error';
  return { status: failed ? 'error' : 'passed', summary: failed ? body.error : undefined, data: JSON.stringify(body), dataPath: undefined, truncated: false, metadata };
}

// The attempts go back only when there was more than one (a retry happened).
function withAttempts(body, attempts) {
  if (attempts && attempts.length > 1) body.attempts = attempts;
  return body;
}

function failure(message, attempts) {
  return result(attempts ? { stop_reason: 'error', content: [], error: cut(message), attempts } : { stop_reason: 'error', content: [], error: cut(message) });
}

export const run = {
  async run(input) {
    let req;
    try { req = JSON.parse(input.data ?? ''); } catch (e) { return failure(`driver request is not JSON: ${e.message}`); }
    const e = Object.fromEntries(getEnvironment());
    const endpoint = (e.MURMUR_INFERENCE_ENDPOINT || '').replace(/\/+$/, '');
    if (!endpoint) return failure('MURMUR_INFERENCE_ENDPOINT is not set');
    let config = {};
    if (e.MURMUR_INFERENCE_DRIVER_CONFIG) {
      try { config = JSON.parse(e.MURMUR_INFERENCE_DRIVER_CONFIG); } catch { return failure('MURMUR_INFERENCE_DRIVER_CONFIG is not JSON'); }
    }
    // max_completion_tokens: Chat Completions deprecated max_tokens, and reasoning models refuse it.
    // An older OpenAI-compatible server that only knows max_tokens: config {"max_tokens_field": "max_tokens"}.
    const limitField = config.max_tokens_field === 'max_tokens' ? 'max_tokens' : 'max_completion_tokens';
    const body = {
      model: req.model,
      [limitField]: req.max_tokens ?? 8192,
      messages: toOpenAiMessages(req.system, req.messages || []),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.prompt_cache_key) body.prompt_cache_key = req.prompt_cache_key;
    if (Array.isArray(req.tools) && req.tools.length) {
      body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description ?? '', parameters: t.parameters ?? { type: 'object' } } }));
    }
    const headers = { 'content-type': 'application/json', accept: 'text/event-stream, application/json' };
    if (e.MURMUR_INFERENCE_API_KEY) headers.authorization = `Bearer ${e.MURMUR_INFERENCE_API_KEY}`;
    const sent = await postWithRetries(`${endpoint}${/\/v\d+[a-z0-9]*$/i.test(endpoint) ? '' : '/v1'}/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) }, config);
    if (sent.failure) return failure(sent.failure, sent.attempts);
    const { text, attempts } = sent;
    try {
      if (text.trimStart().startsWith('{')) {
        const j = JSON.parse(text);
        return result(withAttempts(fromChoice((j.choices || [])[0], j.usage), attempts));
      }
      return result(withAttempts(fromSse(text), attempts));
    } catch (err) {
      return failure(`unreadable provider response: ${err.message}`, attempts);
    }
  },
};
