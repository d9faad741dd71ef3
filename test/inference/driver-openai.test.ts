/**
 * The built-in OpenAI Chat Completions driver (components/driver-openai, C), called directly — the
 * real component in the runtime's component host, over real HTTP to the scripted provider, which
 * validates each request as the API does and answers with exactly the bytes a turn gives (`raw`):
 * the request it sends, the streamed answer (text and reasoning chunks as they arrive, tool calls
 * joined by index, usage, finish_reason, [DONE]), error events and the plain JSON answer.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { API_KEY, capsuleYaml, driverDef, type Kit, openKit } from '../loop/kit.ts';
import { type ScriptTurn, startScriptedProvider } from '../provider/scripted-provider.ts';
import { callDriverOnce } from './driver-call.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const REQUEST = {
  model: 'gpt-test',
  max_tokens: 100,
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'list files' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking.' },
        { type: 'tool_call', id: 'call_1', name: 'ls', input: { command: '-la', n: 1.5 } },
      ],
    },
    {
      role: 'tool',
      tool_call_id: 'call_1',
      is_error: false,
      content: [
        { type: 'text', text: 'a.txt' },
        { type: 'text', text: '\nb.txt' },
      ],
    },
    { role: 'assistant', content: [{ type: 'tool_call', id: 'call_2', name: 'ls', input: {} }] },
    { role: 'tool', tool_call_id: 'call_2', content: 'plain string result' },
    { role: 'user', content: 'a "quoted" string\twith é and \u0001' },
  ],
  tools: [{ name: 'ls', description: 'list', parameters: { type: 'object', properties: { command: { type: 'string' } } } }, { name: 'bare' }],
  params: {},
  system: 'be brief',
  prompt_cache_key: 'kit-capsule:1.0.0:ctx',
};

/** Opens a kit whose driver is driver-openai and calls the driver once with `request`. */
async function callDriver(turns: ScriptTurn[], o: { request?: unknown } = {}) {
  kit = await openKit({ api: 'openai', yaml: capsuleYaml({ api: 'openai', tools: [] }), artifacts: [driverDef('openai')], script: { turns } });
  return invoke(kit, o.request ?? REQUEST);
}

const invoke = (k: Kit, request: unknown) => callDriverOnce(k, JSON.stringify(request));

const sseBody = (events: unknown[], eol = '\n') => events.map((e) => (typeof e === 'string' ? e : `data: ${JSON.stringify(e)}${eol}${eol}`)).join('');
const delta = (d: Record<string, unknown>, finish: string | null = null) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});
const SSE_HEADERS = { 'content-type': 'text/event-stream' };

describe('driver-openai (C)', () => {
  it('sends the Chat Completions request: system first, tool messages, assistant tool_calls with JSON-string arguments, tools as functions', async () => {
    const { result } = await callDriver([{ text: 'ok' }]);
    expect(result.status).toBe('passed');
    const q = kit!.provider.requests[0]!;
    expect(q.path).toBe('/v1/chat/completions');
    expect(q.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(q.headers['content-type']).toBe('application/json');
    expect(q.headers.accept).toBe('text/event-stream, application/json');
    expect(q.body).toEqual({
      model: 'gpt-test',
      max_completion_tokens: 100,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'list files' },
        {
          role: 'assistant',
          content: 'Looking.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"command":"-la","n":1.5}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt\nb.txt' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_2', content: 'plain string result' },
        { role: 'user', content: 'a "quoted" string\twith é and \u0001' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      prompt_cache_key: 'kit-capsule:1.0.0:ctx',
      tools: [
        { type: 'function', function: { name: 'ls', description: 'list', parameters: { type: 'object', properties: { command: { type: 'string' } } } } },
        { type: 'function', function: { name: 'bare', description: '', parameters: { type: 'object' } } },
      ],
    });
  });

  it('max_tokens defaults to 8192; no system, tools or prompt_cache_key when the request has none', async () => {
    await callDriver([{ text: 'ok' }], { request: { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], tools: [], system: '' } });
    expect(kit!.provider.requests[0]!.body).toEqual({
      model: 'gpt-test',
      max_completion_tokens: 8192,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it.each([
    ['an endpoint without a version segment gets /v1', '', '/v1/chat/completions'],
    ['trailing slashes are dropped', '///', '/v1/chat/completions'],
    ['an endpoint ending in /v1 is used as is', '/v1/', '/v1/chat/completions'],
    ['any version segment counts (/v2beta)', '/v2beta', '/v2beta/chat/completions'],
  ])('endpoint rule: %s', async (_, suffix, path) => {
    // The endpoint is the session's: a provider of its own, started first, with `suffix` after its URL.
    const provider = await startScriptedProvider({ turns: [{ text: 'ok' }] });
    try {
      kit = await openKit({
        api: 'openai',
        yaml: capsuleYaml({ api: 'openai', tools: [] }),
        artifacts: [driverDef('openai')],
        script: { turns: [] },
        env: { MURMUR_INFERENCE_ENDPOINT: provider.url + suffix },
      });
      await invoke(kit, REQUEST); // the scripted provider serves /v1 only: /v2beta gets its 404
      expect(provider.requests.map((q) => q.path)).toEqual([path]);
    } finally {
      await provider.stop();
    }
  });

  it('a streamed answer: reasoning and text chunks as they come, tool calls joined by index, usage, finish_reason mapped, [DONE] without its blank line', async () => {
    const body = sseBody(
      [
        ': keep-alive\r\n\r\n',
        { ...delta({ role: 'assistant', content: '' }), usage: null },
        delta({ reasoning_content: 'Let me think.' }),
        delta({ content: 'Hel' }),
        delta({ content: 'lo é😀' }),
        delta({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'second', arguments: '' } }] }),
        delta({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'fir', arguments: '{"x":' } }] }),
        delta({ tool_calls: [{ index: 0, function: { name: 'st', arguments: '12345678901234567890}' } }] }),
        delta({ tool_calls: [{ index: 1, function: { arguments: '{not json' } }] }),
        delta({ tool_calls: [{ index: 2, id: 'call_c', function: { name: 'third' } }] }),
        'data: not json either\r\n\r\n',
        delta({}, 'length'),
        { id: 'c1', choices: [], usage: { prompt_tokens: 120, completion_tokens: 8, prompt_tokens_details: { cached_tokens: 90 } } },
        'data: [DONE]',
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
      stop_reason: 'max_tokens',
      content: [
        { type: 'text', text: 'Hello é😀' },
        { type: 'tool_call', id: 'call_a', name: 'first', input: { x: Number('12345678901234567890') } },
        { type: 'tool_call', id: 'call_b', name: 'second', input: { _unparsed: '{not json' } },
        { type: 'tool_call', id: 'call_c', name: 'third', input: {} },
      ],
      usage: { input_tokens: 120, output_tokens: 8, cached_tokens: 90 },
    });
    // A big integer in the arguments comes through digit for digit (the answer is not re-encoded from doubles).
    expect(raw).toContain('"input":{"x":12345678901234567890}');
  });

  it('invalid UTF-8 in a streamed chunk becomes U+FFFD, as the JS driver’s fetch decoded it, and the chunk is not lost', async () => {
    const [head, tail] = sseBody([delta({ content: 'caf@' }), delta({}, 'stop'), 'data: [DONE]\n\n']).split('@') as [string, string];
    // The scripted provider writes `raw.body` with res.end(), which takes bytes as well as text.
    const body = Buffer.concat([Buffer.from(head), Buffer.from([0xc3]), Buffer.from(tail)]) as unknown as string;
    const { data, chunks } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(chunks).toEqual([['text', 'caf\ufffd']]);
    expect(data.content).toEqual([{ type: 'text', text: 'caf\ufffd' }]);
  });

  it.each([
    ['stop', 'end_turn'],
    ['tool_calls', 'tool_call'],
    ['function_call', 'tool_call'],
    ['content_filter', 'end_turn'],
    ['something_new', 'end_turn'],
  ])('finish_reason %s → stop_reason %s', async (finish, stop) => {
    const body = sseBody([delta({ content: 'x' }), delta({}, finish), 'data: [DONE]\n\n']);
    const { data } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(data.stop_reason).toBe(stop);
  });

  it('a stream cut after its finish_reason chunk is a completed answer (only the usage chunk and [DONE] are lost)', async () => {
    const { result, data } = await callDriver([{ raw: { headers: SSE_HEADERS, body: sseBody([delta({ content: 'all of it' }), delta({}, 'stop')]) } }]);
    expect(result.status).toBe('passed');
    expect(data).toEqual({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'all of it' }] });
  });

  it('a stream with neither finish_reason nor [DONE] is a failed call naming the cut', async () => {
    const { result, data } = await callDriver([{ raw: { headers: SSE_HEADERS, body: sseBody([delta({ content: 'half an ans' })]) } }]);
    expect(result.status).toBe('error');
    expect(result.summary).toBe(
      'unreadable provider response: the provider stream ended before its finish_reason chunk and [DONE] (connection cut mid-answer)',
    );
    expect(data).toEqual({ stop_reason: 'error', content: [], error: result.summary, attempts: [{ attempt: 1, status: 200 }] });
  });

  it('an error event fails the call with the provider’s error object, after the text already streamed', async () => {
    const body = sseBody([
      delta({ content: 'partial' }),
      { error: { message: 'boom', type: 'server_error', param: null } },
      delta({}, 'stop'),
      'data: [DONE]\n\n',
    ]);
    const { result, chunks } = await callDriver([{ raw: { headers: SSE_HEADERS, body } }]);
    expect(result.status).toBe('error');
    expect(result.summary).toBe('unreadable provider response: provider stream error: {"message":"boom","type":"server_error","param":null}');
    expect(chunks).toEqual([['text', 'partial']]);
  });

  it('a plain JSON answer: text, tool calls (arguments parsed, an object kept unparsed, empty → {}), finish_reason, usage; no chunks', async () => {
    const answer = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Plain answer.',
            tool_calls: [
              { id: 'call_p', type: 'function', function: { name: 'ls', arguments: '{"a":[1,2.50]}' } },
              { type: 'function', function: { name: 'obj', arguments: { already: 'object' } } },
              { id: 'call_e', type: 'function', function: { name: 'empty', arguments: '' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 2, prompt_tokens_details: null },
    };
    const { result, data, chunks } = await callDriver([{ raw: { body: `\n  ${JSON.stringify(answer)}` } }]);
    expect(result.status).toBe('passed');
    expect(chunks).toEqual([]);
    expect(data).toEqual({
      stop_reason: 'tool_call',
      content: [
        { type: 'text', text: 'Plain answer.' },
        { type: 'tool_call', id: 'call_p', name: 'ls', input: { a: [1, 2.5] } },
        { type: 'tool_call', name: 'obj', input: { _unparsed: { already: 'object' } } },
        { type: 'tool_call', id: 'call_e', name: 'empty', input: {} },
      ],
      usage: { input_tokens: 5, output_tokens: 2 },
    });
  });

  it('a plain answer that is not JSON fails the call saying where it broke', async () => {
    const { result } = await callDriver([{ raw: { body: '{"choices": [' } }]);
    expect(result.status).toBe('error');
    expect(result.summary).toBe('unreadable provider response: json: value expected at byte 13');
  });
});
