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
import { cut, failure, postWithRetries, result, textOf, withAttempts } from '../common/provider-http.js';

const STOP = { end_turn: 'end_turn', stop_sequence: 'end_turn', tool_use: 'tool_call', max_tokens: 'max_tokens', pause_turn: 'end_turn', refusal: 'end_turn' };

function env() {
  return Object.fromEntries(getEnvironment());
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
