// Inference driver for the Anthropic Messages API.
//
// Contract (the reference runtime's, so drivers built for it and this one are interchangeable):
//   env  MURMUR_INFERENCE_ENDPOINT (required; posts to <endpoint>/v1/messages),
//        MURMUR_INFERENCE_API_KEY (optional; sent as x-api-key),
//        MURMUR_INFERENCE_DRIVER_CONFIG (optional JSON: thinking, thinking_budget_tokens, beta_features)
//   in   tool-input.data = {model, max_tokens, messages, tools, params, system, continuation_id?, prompt_cache_key}
//   out  tool-result.data = {stop_reason: tool_call|end_turn|max_tokens|error, content, usage?, error?}
// `prompt_cache_key` is NOT forwarded: the Messages API rejects fields it does not define.
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

const STOP = { end_turn: 'end_turn', stop_sequence: 'end_turn', tool_use: 'tool_call', max_tokens: 'max_tokens', pause_turn: 'end_turn', refusal: 'end_turn' };

function env() {
  return Object.fromEntries(getEnvironment());
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter((b) => b.type === 'text').map((b) => b.text).join('');
}

function toAnthropicMessages(messages) {
  const out = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: m.tool_call_id, content: textOf(m.content) };
      if (m.is_error) block.is_error = true;
      const last = out[out.length - 1];
      if (last && last.role === 'user' && Array.isArray(last.content) && last.content.every((b) => b.type === 'tool_result')) last.content.push(block);
      else out.push({ role: 'user', content: [block] });
      continue;
    }
    const blocks = [];
    for (const b of typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content || []) {
      if (b.type === 'text') { if (b.text) blocks.push({ type: 'text', text: b.text }); }
      else if (b.type === 'tool_call') blocks.push({ type: 'tool_use', id: b.id, name: b.name, input: b.input ?? {} });
    }
    // The Messages API rejects empty text blocks and empty content; a message with nothing to say
    // (an assistant turn that returned no text) is left out rather than sent empty.
    if (blocks.length) out.push({ role: m.role === 'assistant' ? 'assistant' : 'user', content: blocks });
  }
  return out;
}

function usageOf(u) {
  if (!u || typeof u !== 'object') return undefined;
  const out = {};
  const put = (k, v) => { if (Number.isInteger(v) && v >= 0) out[k] = v; };
  put('input_tokens', u.input_tokens);
  put('output_tokens', u.output_tokens);
  put('cached_tokens', u.cache_read_input_tokens);
  put('cache_write_tokens', u.cache_creation_input_tokens);
  return Object.keys(out).length ? out : undefined;
}

function fromMessage(msg) {
  const content = [];
  for (const b of msg.content || []) {
    if (b.type === 'text') content.push({ type: 'text', text: b.text });
    else if (b.type === 'tool_use') content.push({ type: 'tool_call', id: b.id, name: b.name, input: b.input ?? {} });
  }
  return { stop_reason: STOP[msg.stop_reason] ?? 'end_turn', content, usage: usageOf(msg.usage) };
}

// Rebuilds the final message from an SSE stream, emitting text and thinking deltas as they come.
function fromSse(text) {
  let msg = { content: [], usage: {} };
  let stopped = false;
  for (const frame of text.split(/\r?\n\r?\n/)) {
    const data = frame.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
    if (!data) continue;
    let ev;
    try { ev = JSON.parse(data); } catch { continue; }
    switch (ev.type) {
      case 'message_start':
        msg = { ...ev.message, content: [], usage: { ...(ev.message.usage || {}) } };
        break;
      case 'content_block_start':
        msg.content[ev.index] = { ...ev.content_block, _json: '' };
        break;
      case 'content_block_delta': {
        const b = msg.content[ev.index];
        if (!b) break;
        if (ev.delta.type === 'text_delta') { b.text = (b.text || '') + ev.delta.text; emitChunk(ev.delta.text); }
        else if (ev.delta.type === 'thinking_delta') emitThinkingChunk(ev.delta.thinking);
        else if (ev.delta.type === 'input_json_delta') b._json += ev.delta.partial_json;
        break;
      }
      case 'content_block_stop': {
        const b = msg.content[ev.index];
        if (b && b.type === 'tool_use' && b._json) b.input = JSON.parse(b._json);
        break;
      }
      case 'message_delta':
        if (ev.delta && ev.delta.stop_reason) msg.stop_reason = ev.delta.stop_reason;
        if (ev.usage) Object.assign(msg.usage, ev.usage);
        break;
      case 'message_stop':
        stopped = true;
        break;
      case 'error':
        throw new Error(`provider stream error: ${cut(JSON.stringify(ev.error))}`);
    }
  }
  // A stream cut before its final event holds a partial answer: a failed call, never a completed one.
  if (!stopped) throw new Error('the provider stream ended before message_stop (connection cut mid-answer)');
  msg.content = msg.content.filter(Boolean);
  return fromMessage(msg);
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
    const e = env();
    const endpoint = (e.MURMUR_INFERENCE_ENDPOINT || '').replace(/\/+$/, '');
    if (!endpoint) return failure('MURMUR_INFERENCE_ENDPOINT is not set');
    let config = {};
    if (e.MURMUR_INFERENCE_DRIVER_CONFIG) {
      try { config = JSON.parse(e.MURMUR_INFERENCE_DRIVER_CONFIG); } catch { return failure('MURMUR_INFERENCE_DRIVER_CONFIG is not JSON'); }
    }
    const body = {
      model: req.model,
      max_tokens: req.max_tokens ?? 8192,
      messages: toAnthropicMessages(req.messages || []),
      stream: true,
    };
    if (req.system) body.system = req.system;
    if (Array.isArray(req.tools) && req.tools.length) {
      body.tools = req.tools.map((t) => ({ name: t.name, description: t.description ?? '', input_schema: t.parameters ?? { type: 'object' } }));
    }
    if (config.thinking) body.thinking = { type: 'enabled', budget_tokens: config.thinking_budget_tokens ?? 1024 };
    const headers = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', accept: 'text/event-stream, application/json' };
    if (e.MURMUR_INFERENCE_API_KEY) headers['x-api-key'] = e.MURMUR_INFERENCE_API_KEY;
    if (Array.isArray(config.beta_features) && config.beta_features.length) headers['anthropic-beta'] = config.beta_features.join(',');
    const sent = await postWithRetries(`${endpoint}/v1/messages`, { method: 'POST', headers, body: JSON.stringify(body) }, config);
    if (sent.failure) return failure(sent.failure, sent.attempts);
    const { text, attempts } = sent;
    try {
      return result(withAttempts(text.trimStart().startsWith('{') ? fromMessage(JSON.parse(text)) : fromSse(text), attempts));
    } catch (err) {
      return failure(`unreadable provider response: ${err.message}`, attempts);
    }
  },
};
