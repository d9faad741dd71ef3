import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedProvider, type Script, type ScriptedProvider, type ScriptTurn } from './scripted-provider.ts';

let provider: ScriptedProvider | undefined;
afterEach(async () => {
  await provider?.stop();
  provider = undefined;
});

async function start(script: Script | ScriptTurn[]) {
  provider = await startScriptedProvider(script);
  return provider;
}

const anthropicHeaders = { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' };
const openaiHeaders = { 'content-type': 'application/json', authorization: 'Bearer sk-test' };

function post(url: string, headers: Record<string, string>, body: unknown) {
  return fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

const anthropicBody = (extra: Record<string, unknown> = {}) => ({
  model: 'claude-test',
  max_tokens: 256,
  system: '[Capsule]\n',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'list files' }] }],
  tools: [{ name: 'ls', description: 'list', input_schema: { type: 'object', properties: {} } }],
  ...extra,
});

const openaiBody = (extra: Record<string, unknown> = {}) => ({
  model: 'gpt-test',
  max_completion_tokens: 256,
  messages: [
    { role: 'system', content: '[Capsule]\n' },
    { role: 'user', content: 'list files' },
  ],
  tools: [{ type: 'function', function: { name: 'ls', description: 'list', parameters: { type: 'object', properties: {} } } }],
  ...extra,
});

/** Parse an SSE body into {event?, data} records. */
async function sse(res: Response): Promise<{ event?: string; data: string }[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((block) => {
      const rec: { event?: string; data: string } = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) rec.event = line.slice(7);
        else if (line.startsWith('data: ')) rec.data += line.slice(6);
      }
      return rec;
    });
}

describe('scripted provider: Anthropic Messages API', () => {
  it('answers JSON with text + tool_use blocks, stop_reason and usage incl. cache members; records body and headers', async () => {
    const p = await start([
      {
        text: 'Let me look.',
        toolCalls: [{ id: 'toolu_1', name: 'ls', input: { command: '-la' } }],
        usage: { input: 120, output: 30, cacheRead: 100, cacheWrite: 20 },
      },
    ]);
    const res = await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody());
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const msg = (await res.json()) as Record<string, unknown>;
    expect(msg).toEqual({
      id: 'msg_scripted_0000',
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'ls', input: { command: '-la' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 120, cache_creation_input_tokens: 20, cache_read_input_tokens: 100, output_tokens: 30 },
    });
    expect(p.requests).toHaveLength(1);
    expect(p.requests[0]).toMatchObject({ api: 'anthropic', method: 'POST', path: '/v1/messages', turn: 0, status: 200 });
    expect(p.requests[0]!.headers['x-api-key']).toBe('sk-ant-test');
    expect(p.requests[0]!.body).toEqual(anthropicBody());
  });

  it('maps stop reasons and omits cache members the script did not set (omitted ≠ 0)', async () => {
    const p = await start([{ text: 'cut', stop: 'max_tokens', usage: { input: 5, output: 256 } }, { text: 'done' }]);
    const a = (await (await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody())).json()) as Record<string, any>;
    expect(a.stop_reason).toBe('max_tokens');
    expect(a.usage).toEqual({ input_tokens: 5, output_tokens: 256 });
    const b = (await (await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody())).json()) as Record<string, any>;
    expect(b.stop_reason).toBe('end_turn');
    expect(b.usage.input_tokens).toBeGreaterThan(0);
    expect('cache_read_input_tokens' in b.usage).toBe(false);
  });

  it('streams SSE when stream: true (message_start … content_block_* … message_delta, message_stop)', async () => {
    const p = await start([
      {
        text: 'Hello there, streaming world.',
        toolCalls: [{ id: 'toolu_9', name: 'ls', input: { path: 'src', deep: true } }],
        usage: { input: 50, output: 12, cacheRead: 40 },
      },
    ]);
    const res = await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody({ stream: true }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = await sse(res);
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('message_start');
    expect(names.at(-2)).toBe('message_delta');
    expect(names.at(-1)).toBe('message_stop');
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
    // reassemble like a client does
    const blocks: Record<string, any>[] = [];
    const partial: string[] = [];
    let stop: string | undefined;
    let usage: Record<string, number> | undefined;
    for (const e of events) {
      const d = JSON.parse(e.data);
      if (d.type === 'content_block_start') {
        blocks[d.index] = { ...d.content_block };
        partial[d.index] = '';
      } else if (d.type === 'content_block_delta') {
        if (d.delta.type === 'text_delta') blocks[d.index]!.text += d.delta.text;
        else partial[d.index] += d.delta.partial_json;
      } else if (d.type === 'content_block_stop' && blocks[d.index]!.type === 'tool_use') {
        blocks[d.index]!.input = JSON.parse(partial[d.index]!);
      } else if (d.type === 'message_delta') {
        stop = d.delta.stop_reason;
        usage = d.usage;
      }
    }
    expect(blocks).toEqual([
      { type: 'text', text: 'Hello there, streaming world.' },
      { type: 'tool_use', id: 'toolu_9', name: 'ls', input: { path: 'src', deep: true } },
    ]);
    expect(stop).toBe('tool_use');
    expect(usage).toEqual({ input_tokens: 50, cache_read_input_tokens: 40, output_tokens: 12 });
  });

  it('rejects a body field the API does not define: prompt_cache_key → 400 invalid_request_error, no turn consumed', async () => {
    const p = await start([{ text: 'ok' }]);
    const res = await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody({ prompt_cache_key: 'hello:1.0.0:ctx' }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt_cache_key: Extra inputs are not permitted' } });
    expect(p.remaining()).toBe(1);
    expect(p.requests[0]).toMatchObject({ status: 400, error: 'prompt_cache_key: Extra inputs are not permitted' });
    expect(p.requests[0]!.turn).toBeUndefined();
  });

  it('validates like the real API: auth, anthropic-version, max_tokens, system role, tool pairing, tool names', async () => {
    const p = await start({ turns: [{ text: 'ok' }], apiKey: 'sk-ant-test' });
    const url = `${p.url}/v1/messages`;
    const cases: [Record<string, string>, unknown, number, RegExp][] = [
      [{ 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, anthropicBody(), 401, /x-api-key header is required/],
      [{ ...anthropicHeaders, 'x-api-key': 'wrong' }, anthropicBody(), 401, /invalid x-api-key/],
      [{ 'content-type': 'application/json', 'x-api-key': 'sk-ant-test' }, anthropicBody(), 400, /anthropic-version: header is required/],
      [anthropicHeaders, { ...anthropicBody(), max_tokens: undefined }, 400, /max_tokens: Field required/],
      [anthropicHeaders, anthropicBody({ messages: [{ role: 'system', content: 'x' }] }), 400, /Unexpected role "system"/],
      [
        anthropicHeaders,
        anthropicBody({
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'ls', input: {} }] },
            { role: 'user', content: [{ type: 'text', text: 'no result' }] },
          ],
        }),
        400,
        /`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1/,
      ],
      [
        anthropicHeaders,
        anthropicBody({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }] }),
        400,
        /unexpected `tool_use_id`/,
      ],
      [anthropicHeaders, anthropicBody({ messages: [{ role: 'user', content: [{ type: 'tool_call', id: 'x' }] }] }), 400, /Input tag 'tool_call'/],
      [anthropicHeaders, anthropicBody({ tools: [{ name: 'file.read', input_schema: { type: 'object' } }] }), 400, /String should match pattern/],
      [anthropicHeaders, anthropicBody({ tools: [{ name: 'ls', parameters: { type: 'object' } }] }), 400, /input_schema: Field required/],
      [anthropicHeaders, '{not json', 400, /parsing the body/],
      [anthropicHeaders, anthropicBody({ messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] }), 400, /text content blocks must be non-empty/],
      [
        anthropicHeaders,
        anthropicBody({
          messages: [
            { role: 'user', content: [] },
            { role: 'assistant', content: 'x' },
          ],
        }),
        400,
        /all messages must have non-empty content/,
      ],
    ];
    for (const [headers, body, status, msg] of cases) {
      const res = await post(url, headers, body);
      const json = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(json.type).toBe('error');
      expect(json.error.message).toMatch(msg);
    }
    expect(p.remaining()).toBe(1);
    // a well-formed round trip with tool results is accepted
    const ok = await post(
      url,
      anthropicHeaders,
      anthropicBody({
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'x' },
              { type: 'tool_use', id: 'toolu_1', name: 'ls', input: {} },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt', is_error: false }] },
        ],
      }),
    );
    expect(ok.status).toBe(200);
  });

  it('a mid-stream error event', async () => {
    const p = await start([{ streamError: { type: 'overloaded_error', message: 'Overloaded' } }]);
    const events = await sse(await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody({ stream: true })));
    expect(events.map((e) => e.event)).toEqual(['message_start', 'error']);
    expect(JSON.parse(events[1]!.data)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
  });
});

describe('scripted provider: OpenAI Chat Completions', () => {
  it('answers JSON with tool_calls (arguments as a JSON string), finish_reason and usage incl. cached_tokens; accepts prompt_cache_key', async () => {
    const p = await start([
      { toolCalls: [{ id: 'call_1', name: 'ls', input: { command: '-la' } }], usage: { input: 2000, output: 15, cacheRead: 1920, cacheWrite: 5 } },
    ]);
    const res = await post(`${p.url}/v1/chat/completions`, openaiHeaders, openaiBody({ prompt_cache_key: 'hello:1.0.0:ctx' }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('gpt-test');
    expect(body.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        annotations: [],
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"command":"-la"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
    expect(body.usage).toEqual({ prompt_tokens: 2000, completion_tokens: 15, total_tokens: 2015, prompt_tokens_details: { cached_tokens: 1920 } });
    expect((p.requests[0]!.body as Record<string, unknown>).prompt_cache_key).toBe('hello:1.0.0:ctx');
    expect(p.requests[0]!.headers.authorization).toBe('Bearer sk-test');
  });

  it('maps stop reasons to finish_reason; no prompt_tokens_details when the script sets no cache number', async () => {
    const p = await start([{ text: 'cut', stop: 'max_tokens' }, { text: 'done' }, { text: 'no', stop: 'refusal' }]);
    const url = `${p.url}/v1/chat/completions`;
    const r1 = (await (await post(url, openaiHeaders, openaiBody())).json()) as Record<string, any>;
    expect(r1.choices[0].finish_reason).toBe('length');
    expect(r1.choices[0].message.content).toBe('cut');
    expect('prompt_tokens_details' in r1.usage).toBe(false);
    expect(((await (await post(url, openaiHeaders, openaiBody())).json()) as any).choices[0].finish_reason).toBe('stop');
    expect(((await (await post(url, openaiHeaders, openaiBody())).json()) as any).choices[0].finish_reason).toBe('content_filter');
  });

  it('streams SSE data: chunks with tool_call fragments keyed by index, a usage chunk with include_usage, then [DONE]', async () => {
    const p = await start([
      {
        text: 'Checking both.',
        toolCalls: [
          { name: 'ls', input: { path: 'a' } },
          { name: 'cat', input: { file: 'b.txt' } },
        ],
        usage: { input: 9, output: 4, cacheRead: 0 },
      },
    ]);
    const res = await post(`${p.url}/v1/chat/completions`, openaiHeaders, openaiBody({ stream: true, stream_options: { include_usage: true } }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = await sse(res);
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as Record<string, any>);
    let text = '';
    const calls: { id?: string; name?: string; args: string }[] = [];
    let finish: string | undefined;
    for (const c of chunks.filter((c) => c.choices.length > 0)) {
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.usage).toBeNull();
      const d = c.choices[0].delta;
      if (typeof d.content === 'string') text += d.content;
      for (const tc of d.tool_calls ?? []) {
        calls[tc.index] ??= { args: '' };
        if (tc.id) calls[tc.index]!.id = tc.id;
        if (tc.function?.name) calls[tc.index]!.name = tc.function.name;
        calls[tc.index]!.args += tc.function?.arguments ?? '';
      }
      finish = c.choices[0].finish_reason ?? finish;
    }
    expect(text).toBe('Checking both.');
    expect(calls.map((c) => [c.id, c.name, JSON.parse(c.args)])).toEqual([
      ['call_scripted_0_0', 'ls', { path: 'a' }],
      ['call_scripted_0_1', 'cat', { file: 'b.txt' }],
    ]);
    expect(finish).toBe('tool_calls');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('without include_usage, no usage field is streamed', async () => {
    const p = await start([{ text: 'hi' }]);
    const events = await sse(await post(`${p.url}/v1/chat/completions`, openaiHeaders, openaiBody({ stream: true })));
    for (const e of events.slice(0, -1)) expect('usage' in JSON.parse(e.data)).toBe(false);
  });

  it('validates like the real API: auth, unknown fields, prompt_cache_key length, tool message pairing, argument types', async () => {
    const p = await start([{ text: 'ok' }]);
    const url = `${p.url}/v1/chat/completions`;
    const cases: [Record<string, string>, unknown, number, RegExp, string | null][] = [
      [{ 'content-type': 'application/json' }, openaiBody(), 401, /didn't provide an API key/, null],
      [openaiHeaders, openaiBody({ continuation_id: 'x' }), 400, /Unrecognized request argument supplied: continuation_id/, null],
      [openaiHeaders, openaiBody({ prompt_cache_key: 'k'.repeat(65) }), 400, /maximum length 64, but got a string with length 65/, 'string_above_max_length'],
      [openaiHeaders, openaiBody({ messages: [] }), 400, /empty array/, 'empty_array'],
      [openaiHeaders, openaiBody({ stream_options: { include_usage: true } }), 400, /only allowed when 'stream' is enabled/, null],
      [
        openaiHeaders,
        openaiBody({
          messages: [
            { role: 'user', content: 'x' },
            { role: 'tool', tool_call_id: 'call_9', content: 'r' },
          ],
        }),
        400,
        /must be a response to a preceeding message with 'tool_calls'/,
        null,
      ],
      [
        openaiHeaders,
        openaiBody({
          messages: [
            { role: 'user', content: 'x' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
            { role: 'user', content: 'next' },
          ],
        }),
        400,
        /did not have response messages: call_1/,
        null,
      ],
      [
        openaiHeaders,
        openaiBody({
          messages: [
            { role: 'user', content: 'x' },
            { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'ls', arguments: {} } }] },
          ],
        }),
        400,
        /expected a string, but got an object/,
        'invalid_type',
      ],
      [openaiHeaders, openaiBody({ messages: [{ role: 'robot', content: 'x' }] }), 400, /Invalid value: 'robot'/, 'invalid_value'],
      [openaiHeaders, openaiBody({ tools: [{ type: 'function', function: { name: 'a.b' } }] }), 400, /does not match pattern/, 'invalid_value'],
    ];
    for (const [headers, body, status, msg, code] of cases) {
      const res = await post(url, headers, body);
      const json = (await res.json()) as { error: { message: string; type: string; code: string | null } };
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(json.error.message).toMatch(msg);
      expect(json.error.code).toBe(code);
    }
    expect(p.remaining()).toBe(1);
  });
});

describe('scripted provider: script control', () => {
  it("replays HTTP errors in each API's own shape, with retry-after", async () => {
    const p = await start([
      { error: { status: 429, message: 'slow down', retryAfter: 3 } },
      { error: { status: 529 } },
      { error: { status: 500, type: 'server_error', message: 'boom' } },
    ]);
    const a = await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody());
    expect(a.status).toBe(429);
    expect(a.headers.get('retry-after')).toBe('3');
    expect(await a.json()).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
    const b = await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody());
    expect(b.status).toBe(529);
    expect(((await b.json()) as any).error.type).toBe('overloaded_error');
    const c = await post(`${p.url}/v1/chat/completions`, openaiHeaders, openaiBody());
    expect(c.status).toBe(500);
    expect(await c.json()).toEqual({ error: { message: 'boom', type: 'server_error', param: null, code: 'server_error' } });
  });

  it('replays raw responses and delays; exhaustion answers 500; repeat-last replays', async () => {
    const p = await start([{ raw: { status: 200, body: 'not json at all' } }, { text: 'late', delayMs: 150 }]);
    expect(await (await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody())).text()).toBe('not json at all');
    // Two requests at once: one gets the delayed turn, the other finds the script exhausted and is
    // answered at once. The delay shows as order: the exhausted 500 arrives first, the delayed turn after.
    const order: number[] = [];
    const both = [0, 1].map(() =>
      post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody()).then(async (r) => {
        order.push(r.status);
        return { status: r.status, body: (await r.json()) as any };
      }),
    );
    const answers = await Promise.all(both);
    expect(order).toEqual([500, 200]);
    const ex = answers.find((a) => a.status === 500)!;
    expect(ex.body.error.message).toMatch(/script exhausted after 2 turn/);
    expect(answers.find((a) => a.status === 200)!.body.content[0].text).toBe('late');
    await provider!.stop();
    provider = await startScriptedProvider({ turns: [{ text: 'again' }], onExhausted: 'repeat-last' });
    for (let i = 0; i < 3; i++) {
      const r = (await (await post(`${provider.url}/v1/messages`, anthropicHeaders, anthropicBody())).json()) as any;
      expect(r.content[0].text).toBe('again');
    }
  });

  it('a turn pinned to one API refuses the other; unknown paths are 404', async () => {
    const p = await start([{ api: 'openai', text: 'x' }]);
    const r = await post(`${p.url}/v1/messages`, anthropicHeaders, anthropicBody());
    expect(r.status).toBe(500);
    expect(((await r.json()) as any).error.message).toMatch(/scripted for openai/);
    const nf = await post(`${p.url}/v1/complete`, anthropicHeaders, {});
    expect(nf.status).toBe(404);
  });
});

describe('scripted provider: CLI', () => {
  it('node --import tsx test/provider/scripted-provider.ts --script file.json --port 0 serves the script and records requests', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'provider-cli-'));
    try {
      const scriptFile = path.join(dir, 'script.json');
      const recordFile = path.join(dir, 'requests.jsonl');
      await writeFile(scriptFile, JSON.stringify({ turns: [{ text: 'from the CLI' }] }));
      const entry = fileURLToPath(new URL('./scripted-provider.ts', import.meta.url));
      const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/esm/index.mjs', import.meta.url));
      const child = spawn(process.execPath, ['--import', tsx, entry, '--script', scriptFile, '--port', '0', '--record', recordFile], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        const url = await new Promise<string>((resolve, rejectP) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
            if (m) resolve(m[1]!);
          });
          child.once('exit', (code) => rejectP(new Error(`exited ${code}: ${out}`)));
        });
        const res = (await (await post(`${url}/v1/chat/completions`, openaiHeaders, openaiBody())).json()) as any;
        expect(res.choices[0].message.content).toBe('from the CLI');
        const lines = (await readFile(recordFile, 'utf8')).trim().split('\n');
        expect(JSON.parse(lines[0]!)).toMatchObject({ api: 'openai', status: 200, turn: 0 });
      } finally {
        child.kill('SIGTERM');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
