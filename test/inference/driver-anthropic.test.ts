/**
 * The built-in Anthropic Messages driver (components/driver-anthropic, C), called directly — the
 * real component in the runtime's component host, over real HTTP to the scripted provider, which
 * validates each request as the API does and answers with exactly the bytes a turn gives (`raw`):
 * the request it sends (message translation, tools, system, thinking, headers), the streamed answer
 * (thinking and text chunks as they arrive, tool inputs joined from their pieces, stop reason,
 * usage, message_stop), error events and the plain JSON answer.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { API_KEY, capsuleYaml, driverDef, type Kit, openKit } from '../loop/kit.ts';
import type { ScriptTurn } from '../provider/scripted-provider.ts';
import { callDriverOnce } from './driver-call.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const REQUEST = {
  model: 'claude-test',
  max_tokens: 100,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'list files' },
        { type: 'text', text: '' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking.' },
        { type: 'tool_call', id: 'toolu_1', name: 'ls', input: { command: '-la', n: 1.5 } },
        { type: 'tool_call', id: 'toolu_2', name: 'ls' },
      ],
    },
    {
      role: 'tool',
      tool_call_id: 'toolu_1',
      is_error: true,
      content: [
        { type: 'text', text: 'a.txt' },
        { type: 'text', text: '\nb.txt' },
      ],
    },
    { role: 'tool', tool_call_id: 'toolu_2', content: 'plain string result' },
    { role: 'assistant', content: '' },
    { role: 'user', content: 'a "quoted" string\twith é and \u0001' },
  ],
  tools: [{ name: 'ls', description: 'list', parameters: { type: 'object', properties: { command: { type: 'string' } } } }, { name: 'bare' }],
  params: {},
  system: 'be brief',
  prompt_cache_key: 'kit-capsule:1.0.0:ctx',
};

/** Opens a kit whose driver is driver-anthropic (with `config` as its driver config) and calls it once. */
async function callDriver(turns: ScriptTurn[], o: { request?: unknown; data?: string; config?: Record<string, unknown> } = {}) {
  let yaml = capsuleYaml({ tools: [] });
  if (o.config) yaml = yaml.replace('driver: {artifact: driver-anthropic}', `driver: {artifact: driver-anthropic, config: ${JSON.stringify(o.config)}}`);
  kit = await openKit({ yaml, artifacts: [driverDef('anthropic')], script: { turns } });
  return callDriverOnce(kit, o.data ?? JSON.stringify(o.request ?? REQUEST));
}

/** An SSE body of named events (`event:` and `data:` lines), or a string sent as it is. */
const sseBody = (events: unknown[], eol = '\n') =>
  events.map((e) => (typeof e === 'string' ? e : `event: ${(e as { type: string }).type}${eol}data: ${JSON.stringify(e)}${eol}${eol}`)).join('');
const SSE_HEADERS = { 'content-type': 'text/event-stream' };
const start = (usage: Record<string, unknown> = { input_tokens: 1, output_tokens: 1 }) => ({
  type: 'message_start',
  message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null, usage },
});
const blockStart = (index: number, block: Record<string, unknown>) => ({ type: 'content_block_start', index, content_block: block });
const blockDelta = (index: number, delta: Record<string, unknown>) => ({ type: 'content_block_delta', index, delta });
const blockStop = (index: number) => ({ type: 'content_block_stop', index });
const messageDelta = (stop: string, usage: Record<string, unknown> = { output_tokens: 2 }) => ({
  type: 'message_delta',
  delta: { stop_reason: stop, stop_sequence: null },
  usage,
});
const STOP = { type: 'message_stop' };

describe('driver-anthropic (C)', () => {
  it('sends the Messages request: tool results grouped, empty text and empty messages left out, tools with input_schema, system, stream', async () => {
    const { result } = await callDriver([{ text: 'ok' }]);
    expect(result.status).toBe('passed');
    const q = kit!.provider.requests[0]!;
    expect(q.path).toBe('/v1/messages');
    expect(q.headers['x-api-key']).toBe(API_KEY);
    expect(q.headers['anthropic-version']).toBe('2023-06-01');
    expect(q.headers['anthropic-beta']).toBeUndefined();
    expect(q.headers['content-type']).toBe('application/json');
    expect(q.headers.accept).toBe('text/event-stream, application/json');
    expect(q.body).toEqual({
      model: 'claude-test',
      max_tokens: 100,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'list files' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'ls', input: { command: '-la', n: 1.5 } },
            { type: 'tool_use', id: 'toolu_2', name: 'ls', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt\nb.txt', is_error: true },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'plain string result' },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'a "quoted" string\twith é and \u0001' }] },
      ],
      stream: true,
      system: 'be brief',
      tools: [
        { name: 'ls', description: 'list', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
        { name: 'bare', description: '', input_schema: { type: 'object' } },
      ],
    });
    // The members in the order the JS driver wrote them; prompt_cache_key is not forwarded.
    expect(Object.keys(q.body as object)).toEqual(['model', 'max_tokens', 'messages', 'stream', 'system', 'tools']);
  });

  it('max_tokens defaults to 8192; the driver config turns on thinking (budget 1024 unless set) and sends beta_features as anthropic-beta', async () => {
    const request = { model: 'claude-test', messages: [{ role: 'user', content: 'hi' }], tools: [], system: '' };
    await callDriver([{ text: 'ok' }], { request, config: { thinking: true, beta_features: ['one-2025', 'two-2026'] } });
    const q = kit!.provider.requests[0]!;
    expect(q.body).toEqual({
      model: 'claude-test',
      max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(q.headers['anthropic-beta']).toBe('one-2025,two-2026');
    await kit!.close();
    kit = undefined;
    await callDriver([{ text: 'ok' }], { request, config: { thinking: true, thinking_budget_tokens: 2048 } });
    expect((kit!.provider.requests[0]!.body as Record<string, unknown>).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('a streamed answer: thinking and text chunks as they come, tool inputs joined from their pieces, stop reason and usage', async () => {
    const body = sseBody(
      [
        ': a comment\r\n\r\n',
        start({ input_tokens: 120, output_tokens: 1, cache_read_input_tokens: 90, cache_creation_input_tokens: 7 }),
        { type: 'ping' },
        blockStart(0, { type: 'thinking', thinking: '' }),
        blockDelta(0, { type: 'thinking_delta', thinking: 'Let me think.' }),
        blockStop(0),
        blockStart(1, { type: 'text', text: '' }),
        blockDelta(1, { type: 'text_delta', text: 'Hel' }),
        blockDelta(1, { type: 'text_delta', text: 'lo é😀' }),
        blockStop(1),
        blockStart(2, { type: 'tool_use', id: 'toolu_a', name: 'first', input: {} }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '' }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '{"x":' }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '12345678901234567890}' }),
        blockStop(2),
        blockStart(3, { type: 'tool_use', id: 'toolu_b', name: 'second', input: {} }),
        blockStop(3),
        'data: not json either\r\n\r\n',
        messageDelta('tool_use', { output_tokens: 8 }),
        STOP,
      ],
      '\r\n',
    );
    const { result, raw, data, chunks } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(result.status).toBe('passed');
    expect(chunks).toEqual([
      ['thinking', 'Let me think.'],
      ['text', 'Hel'],
      ['text', 'lo é😀'],
    ]);
    expect(data).toEqual({
      stop_reason: 'tool_call',
      content: [
        { type: 'text', text: 'Hello é😀' },
        { type: 'tool_call', id: 'toolu_a', name: 'first', input: { x: Number('12345678901234567890') } },
        { type: 'tool_call', id: 'toolu_b', name: 'second', input: {} },
      ],
      usage: { input_tokens: 120, output_tokens: 8, cached_tokens: 90, cache_write_tokens: 7 },
    });
    expect(raw).toContain('"input":{"x":12345678901234567890}');
    expect(data.attempts).toBeUndefined(); // one attempt: none reported
  });

  it.each([
    ['end_turn', 'end_turn'],
    ['stop_sequence', 'end_turn'],
    ['tool_use', 'tool_call'],
    ['max_tokens', 'max_tokens'],
    ['pause_turn', 'end_turn'],
    ['refusal', 'end_turn'],
    ['something_new', 'end_turn'],
  ])('stop_reason %s → %s', async (stop, mapped) => {
    const body = sseBody([
      start(),
      blockStart(0, { type: 'text', text: '' }),
      blockDelta(0, { type: 'text_delta', text: 'x' }),
      blockStop(0),
      messageDelta(stop),
      STOP,
    ]);
    const { data } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(data.stop_reason).toBe(mapped);
  });

  it('an error event fails the call with the provider’s error object, after the text already streamed', async () => {
    const body = sseBody([
      start(),
      blockStart(0, { type: 'text', text: '' }),
      blockDelta(0, { type: 'text_delta', text: 'partial' }),
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      messageDelta('end_turn'),
      STOP,
    ]);
    const { result, data, chunks } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(result.status).toBe('error');
    expect(result.summary).toBe('unreadable provider response: provider stream error: {"type":"overloaded_error","message":"Overloaded"}');
    expect(data).toEqual({ stop_reason: 'error', content: [], error: result.summary, attempts: [{ attempt: 1, status: 200 }] });
    expect(chunks).toEqual([['text', 'partial']]);
  });

  it('a tool input whose pieces do not make JSON fails the call', async () => {
    const body = sseBody([
      start(),
      blockStart(0, { type: 'tool_use', id: 't', name: 'ls', input: {} }),
      blockDelta(0, { type: 'input_json_delta', partial_json: '{"a":' }),
      blockStop(0),
      messageDelta('tool_use'),
      STOP,
    ]);
    const { result } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(result.status).toBe('error');
    expect(result.summary).toMatch(/^unreadable provider response: the tool_use input is not JSON: /);
  });

  it('invalid UTF-8 in a text delta becomes U+FFFD, as the JS driver’s fetch decoded it, and the chunk is not lost', async () => {
    const [head, tail] = sseBody([
      start(),
      blockStart(0, { type: 'text', text: '' }),
      blockDelta(0, { type: 'text_delta', text: 'caf@' }),
      blockStop(0),
      messageDelta('end_turn'),
      STOP,
    ]).split('@') as [string, string];
    // The scripted provider writes `raw.body` with res.end(), which takes bytes as well as text.
    const body = Buffer.concat([Buffer.from(head), Buffer.from([0xc3]), Buffer.from(tail)]) as unknown as string;
    const { data, chunks } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(chunks).toEqual([['text', 'caf\ufffd']]);
    expect(data.content).toEqual([{ type: 'text', text: 'caf\ufffd' }]);
  });

  it('a plain JSON answer: text and tool_use blocks (others dropped), stop reason, usage; no chunks', async () => {
    const answer = {
      id: 'msg_p',
      type: 'message',
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hidden' },
        { type: 'text', text: 'Plain answer.' },
        { type: 'tool_use', id: 'toolu_p', name: 'ls', input: { a: [1, 2.5] } },
        { type: 'tool_use', id: 'toolu_q', name: 'bare', input: null },
      ],
      stop_reason: 'max_tokens',
      usage: { input_tokens: 5, output_tokens: 2, cache_read_input_tokens: -1 },
    };
    const { result, data, chunks } = await callDriver([{ raw: { body: `\n  ${JSON.stringify(answer)}` } }]);
    expect(result.status).toBe('passed');
    expect(chunks).toEqual([]);
    expect(data).toEqual({
      stop_reason: 'max_tokens',
      content: [
        { type: 'text', text: 'Plain answer.' },
        { type: 'tool_call', id: 'toolu_p', name: 'ls', input: { a: [1, 2.5] } },
        { type: 'tool_call', id: 'toolu_q', name: 'bare', input: {} },
      ],
      usage: { input_tokens: 5, output_tokens: 2 },
    });
  });

  it('a plain answer that is not JSON, and a driver request that is not JSON, fail the call saying so', async () => {
    const { result } = await callDriver([{ raw: { body: '{"content": [' } }]);
    expect(result.status).toBe('error');
    expect(result.summary).toMatch(/^unreadable provider response: json: .* at byte \d+$/);
    await kit!.close();
    kit = undefined;
    const bad = await callDriver([{ text: 'never asked' }], { data: 'not json' });
    expect(bad.result.status).toBe('error');
    expect(bad.result.summary).toMatch(/^driver request is not JSON: /);
    expect(bad.data).toEqual({ stop_reason: 'error', content: [], error: bad.result.summary });
    expect(kit!.provider.requests).toHaveLength(0);
  });
});
