import { describe, expect, it } from 'vitest';
import { MurError } from '../../runtime/errors.ts';
import { buildDriverRequest, parseDriverResponse, type ConversationMessage } from '../../runtime/inference/wire.ts';

const history: ConversationMessage[] = [
  { id: 'msg_0b6f1c2e-8f5d-4a51-9b0e-6f2d3c4b5a69', 'source-id': 'a2a:m-1', role: 'user', content: [{ type: 'text', text: 'list files' }] },
  {
    id: 'msg_1',
    role: 'assistant',
    content: [
      { type: 'text', text: 'Looking.' },
      { type: 'tool_call', id: 'call_1', name: 'ls', input: { command: '-la' } },
    ],
  },
  { id: 'msg_2', 'source-id': 'tool:ls', role: 'tool', tool_call_id: 'call_1', is_error: false, content: [{ type: 'text', text: 'a.txt' }] },
];

describe('driver wire format (research/murmur.md §3)', () => {
  it('builds exactly the reference request JSON, in the reference key order', () => {
    const req = buildDriverRequest({
      model: 'claude-x',
      maxTokens: 1024,
      system: '[Capsule]\n...',
      messages: history,
      tools: [{ name: 'ls', parameters: { type: 'object' }, description: 'list' }],
      promptCacheKey: 'hello:1.0.0:ctx',
    });
    expect(JSON.stringify(req)).toBe(
      JSON.stringify({
        model: 'claude-x',
        max_tokens: 1024,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'list files' }] },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Looking.' },
              { type: 'tool_call', id: 'call_1', name: 'ls', input: { command: '-la' } },
            ],
          },
          { role: 'tool', content: [{ type: 'text', text: 'a.txt' }], tool_call_id: 'call_1', is_error: false },
        ],
        tools: [{ name: 'ls', parameters: { type: 'object' }, description: 'list' }],
        params: {},
        system: '[Capsule]\n...',
        prompt_cache_key: 'hello:1.0.0:ctx',
      }),
    );
  });

  it('message id and source-id bookkeeping are stripped before the payload is built', () => {
    const req = buildDriverRequest({ model: 'm', maxTokens: 1, system: '', messages: history, tools: [], promptCacheKey: 'k' });
    const json = JSON.stringify(req);
    expect(json).not.toContain('msg_');
    expect(json).not.toContain('source-id');
    expect(json).not.toContain('a2a:m-1');
    // The caller's objects are untouched.
    expect(history[0]!.id).toMatch(/^msg_/);
  });

  it('carries continuation_id (before prompt_cache_key) only when non-empty', () => {
    const base = { model: 'm', maxTokens: 8, system: 's', messages: [], tools: [], promptCacheKey: 'k' } as const;
    expect(Object.keys(buildDriverRequest({ ...base, continuationId: 'resp_9' }))).toEqual([
      'model',
      'max_tokens',
      'messages',
      'tools',
      'params',
      'system',
      'continuation_id',
      'prompt_cache_key',
    ]);
    expect('continuation_id' in buildDriverRequest({ ...base, continuationId: '' })).toBe(false);
    expect('continuation_id' in buildDriverRequest(base)).toBe(false);
  });

  it('refuses to build a request the driver could not read (E-INF-001, naming the field)', () => {
    const base = { model: 'm', maxTokens: 8, system: 's', tools: [], promptCacheKey: 'k' };
    const cases: [ConversationMessage[], string][] = [
      [[{ role: 'system' as never, content: [] }], 'messages[0].role'],
      [[{ role: 'tool', content: [{ type: 'text', text: 'x' }] }], 'messages[0].tool_call_id'],
      [[{ role: 'user', content: 'hi' as never }], 'messages[0].content'],
      [[{ role: 'assistant', content: [{ type: 'tool_call', id: 'c', name: 't', input: 'x' as never }] }], 'messages[0].content[0].input'],
    ];
    for (const [messages, field] of cases) {
      try {
        buildDriverRequest({ ...base, messages });
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(MurError);
        expect((e as MurError).code).toBe('E-INF-001');
        expect((e as MurError).location?.field).toBe(field);
      }
    }
    expect(() => buildDriverRequest({ ...base, messages: [], maxTokens: 0 })).toThrow(/max_tokens/);
  });

  it('parses a response: stop_reason, content, usage, error', () => {
    const r = parseDriverResponse(
      JSON.stringify({
        stop_reason: 'tool_call',
        content: [{ type: 'tool_call', id: 'c1', name: 'ls', input: {} }],
        usage: { input_tokens: 5, bogus: 1 },
      }),
    );
    expect(r.stop_reason).toBe('tool_call');
    expect(r.content).toEqual([{ type: 'tool_call', id: 'c1', name: 'ls', input: {} }]);
    expect(r.usage).toEqual({ input_tokens: 5 });
    expect(r.usageDropped).toEqual([{ member: 'bogus', reason: 'unknown-member' }]);
    const e = parseDriverResponse({ stop_reason: 'error', error: 'provider said 529' });
    expect(e).toMatchObject({ stop_reason: 'error', content: [], error: 'provider said 529' });
    expect(parseDriverResponse({ stop_reason: 'end_turn', content: [], usage: 'x' }).usage).toBeUndefined();
  });

  it('rejects a malformed response with a clear error naming the field', () => {
    const bad: [unknown, string, RegExp][] = [
      ['not json', 'E-INF-002', /not JSON/],
      [[], 'E-INF-003', /expected a JSON object, got an array/],
      [{ stop_reason: 'stop', content: [] }, 'E-INF-003', /stop_reason is "stop"/],
      [{ stop_reason: 'end_turn' }, 'E-INF-003', /content must be an array/],
      [{ stop_reason: 'end_turn', content: [{ type: 'image' }] }, 'E-INF-003', /content\[0\]\.type/],
      [{ stop_reason: 'tool_call', content: [{ type: 'text', text: 'x' }] }, 'E-INF-003', /no tool_call block/],
      [
        {
          stop_reason: 'tool_call',
          content: [
            { type: 'tool_call', id: 'a', name: 't', input: {} },
            { type: 'tool_call', id: 'a', name: 't', input: {} },
          ],
        },
        'E-INF-003',
        /share the id/,
      ],
      [{ stop_reason: 'end_turn', content: [{ type: 'tool_call', id: 'a', name: 't', input: '{}' }] }, 'E-INF-003', /input must be a JSON object/],
    ];
    for (const [raw, code, msg] of bad) {
      try {
        parseDriverResponse(raw);
        expect.unreachable(JSON.stringify(raw));
      } catch (e) {
        expect((e as MurError).code).toBe(code);
        expect((e as MurError).message).toMatch(msg);
        expect((e as MurError).hint).toBeTruthy();
      }
    }
  });
});

describe('message helpers', () => {
  it('assistantMessage / toolMessage / toolCalls build wire messages that round-trip through buildDriverRequest', async () => {
    const { assistantMessage, toolMessage, toolCalls } = await import('../../runtime/inference/wire.ts');
    const resp = parseDriverResponse({
      stop_reason: 'tool_call',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'tool_call', id: 'c1', name: 'ls', input: { a: 1 } },
      ],
    });
    const a = assistantMessage(resp);
    expect(a).toEqual({ role: 'assistant', content: resp.content });
    expect(toolCalls(resp).map((c) => c.id)).toEqual(['c1']);
    const t = toolMessage('c1', 'a.txt', true);
    expect(t).toEqual({ role: 'tool', content: [{ type: 'text', text: 'a.txt' }], tool_call_id: 'c1', is_error: true });
    const req = buildDriverRequest({
      model: 'm',
      maxTokens: 1,
      system: '',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }, a, t],
      tools: [],
      promptCacheKey: 'k',
    });
    expect(req.messages).toHaveLength(3);
  });
});
