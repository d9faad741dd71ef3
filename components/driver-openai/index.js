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
import { cut, failure, postWithRetries, result, textOf, withAttempts } from '../common/provider-http.js';

const STOP = { stop: 'end_turn', tool_calls: 'tool_call', function_call: 'tool_call', length: 'max_tokens', content_filter: 'end_turn' };

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
