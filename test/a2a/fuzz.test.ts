/**
 * A flood of malformed and fuzzed requests: every one gets a well-formed JSON-RPC error (or a
 * result when a mutation happens to be valid), never a 5xx or a stack trace, and the server
 * still answers correctly afterwards.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeAll, msg03, msg10, rpc, serve } from './helpers.ts';

afterAll(closeAll);

// Deterministic PRNG (mulberry32).
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COUNT = 2000;
const KNOWN_CODES = new Set([-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005, -32007, -32009]);

function makeCase(r: () => number, i: number): { body: string | Uint8Array; headers: Record<string, string> } {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  const weird = (): unknown => pick([null, 0, -1, 1.5, '', 'x', true, [], {}, [1, 2], { a: 1 }, 'A'.repeat(1000), '\u0000', '💥', { kind: 'text' }]);
  const methods = [
    'message/send',
    'message/stream',
    'tasks/get',
    'tasks/cancel',
    'tasks/resubscribe',
    'SendMessage',
    'SendStreamingMessage',
    'GetTask',
    'CancelTask',
    'ListTasks',
    'SubscribeToTask',
    'nope',
    '',
    'tasks/pushNotificationConfig/set',
    'agent/getAuthenticatedExtendedCard',
    'GetExtendedAgentCard',
  ];
  const headers: Record<string, string> = {
    'content-type': pick(['application/json', 'application/json', 'application/json', 'text/plain', 'application/json; charset=utf-8']),
  };
  if (r() < 0.3) headers['A2A-Version'] = pick(['1.0', '0.3', '1', '2.0', 'abc', '', '0.2', '1.0.1']);
  if (r() < 0.1) headers['x-murmur-task-origin'] = pick(['peer', 'root', '']);
  const kind = i % 6;
  if (kind === 0) {
    // random bytes
    const n = Math.floor(r() * 200);
    return { body: Uint8Array.from({ length: n }, () => Math.floor(r() * 256)), headers };
  }
  const good = JSON.stringify({ jsonrpc: '2.0', id: i, method: pick(methods), params: { message: r() < 0.5 ? msg03('hi') : msg10('hi'), id: 'x' } });
  if (kind === 1) {
    // truncated / corrupted JSON
    const cut = good.slice(0, Math.floor(r() * good.length));
    const pos = Math.floor(r() * cut.length);
    return { body: cut.slice(0, pos) + pick(['{', '}', '"', ',', ':', ']', '\\']) + cut.slice(pos + 1), headers };
  }
  if (kind === 2) {
    // valid JSON, wrong top-level type
    return { body: JSON.stringify(pick([null, 1, 'str', [], [{ jsonrpc: '2.0', id: 1, method: 'tasks/get' }], true, {}])), headers };
  }
  if (kind === 3) {
    // envelope mutations
    const env: Record<string, unknown> = { jsonrpc: '2.0', id: i, method: pick(methods), params: {} };
    const field = pick(['jsonrpc', 'id', 'method', 'params']);
    if (r() < 0.5) delete env[field];
    else env[field] = weird();
    return { body: JSON.stringify(env), headers };
  }
  if (kind === 4) {
    // params / message mutations
    const m: Record<string, unknown> = r() < 0.5 ? msg03('hi') : msg10('hi');
    const field = pick(['messageId', 'role', 'parts', 'kind', 'taskId', 'contextId', 'metadata']);
    if (r() < 0.3) delete m[field];
    else m[field] = weird();
    if (r() < 0.3)
      m.parts = [
        pick([
          { kind: 'text' },
          { kind: 'file', file: {} },
          { kind: 'data', data: 5 },
          { text: 5 },
          { raw: '!!' },
          null,
          'str',
          { kind: 'text', text: weird() },
        ]),
      ];
    const params: Record<string, unknown> = pick([
      { message: m },
      { message: m, configuration: weird() },
      { id: weird() },
      { id: 'missing-task' },
      { message: m, metadata: weird() },
    ]);
    return { body: JSON.stringify({ jsonrpc: '2.0', id: i, method: pick(methods), params }), headers };
  }
  // oversized or deeply nested
  if (r() < 0.1) return { body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"${'a'.repeat(1024 * 1024 + 10)}"}}`, headers };
  return { body: '['.repeat(5000) + ']'.repeat(5000), headers };
}

describe('fuzzed requests', () => {
  it(`survives ${COUNT} malformed bodies and still answers correctly`, async () => {
    const s = await serve(async (ctx) => ({ state: 'completed', text: `ok ${ctx.text}` }), { queueDepth: 1000 });
    const r = rng(42);
    const cases = Array.from({ length: COUNT }, (_, i) => makeCase(r, i));
    const statuses = new Map<number, number>();
    const codes = new Map<number, number>();
    for (let i = 0; i < cases.length; i += 50) {
      await Promise.all(
        cases.slice(i, i + 50).map(async (c) => {
          const res = await fetch(s.url, { method: 'POST', headers: c.headers, body: c.body as string });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const text = await res.text();
          expect(res.status, text).toBeLessThan(500);
          expect(text).not.toMatch(/\n\s+at [^\n]+:\d+:\d+/); // no stack trace
          if (res.headers.get('content-type')?.includes('text/event-stream')) return;
          if (res.status === 204) {
            // A notification (no id): never answered (gaps.test.ts checks it runs nothing).
            expect(text).toBe('');
            expect(JSON.parse(c.body as string)).not.toHaveProperty('id');
            return;
          }
          const body = JSON.parse(text);
          expect(body.jsonrpc).toBe('2.0');
          if (body.error) {
            expect(KNOWN_CODES.has(body.error.code), JSON.stringify(body)).toBe(true);
            expect(typeof body.error.message).toBe('string');
            expect(body.error.message.length).toBeGreaterThan(0);
            codes.set(body.error.code, (codes.get(body.error.code) ?? 0) + 1);
          }
        }),
      );
    }
    // The classic codes all showed up.
    for (const code of [-32700, -32600, -32601, -32602]) expect(codes.get(code) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(413) ?? 0).toBeGreaterThan(0);
    // Still healthy and correct.
    const ok = await rpc(s.url, 'message/send', { message: msg03('after') });
    expect(ok.body.result.status.state).toBe('completed');
    expect(ok.body.result.artifacts[0].parts[0].text).toBe('ok after');
    expect((await fetch(new URL('healthz', s.url))).status).toBe(200);
  });

  it('answers the classic errors with the standard codes and helpful messages', async () => {
    const s = await serve(async () => ({ state: 'completed' }));
    const post = (body: string, h: Record<string, string> = {}) =>
      fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json', ...h }, body }).then(async (r) => ({
        status: r.status,
        body: await r.json(),
      }));
    expect((await post('{"jsonrpc":')).body.error).toMatchObject({ code: -32700, message: expect.stringContaining('not valid JSON') });
    expect((await post('')).body.error.code).toBe(-32700);
    expect((await post('[]')).body.error).toMatchObject({ code: -32600, message: expect.stringContaining('batch') });
    expect((await post('{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"x"}}')).body).toMatchObject({
      id: 1,
      error: { code: -32600, message: expect.stringContaining('"2.0"') },
    });
    expect((await post('{"jsonrpc":"2.0","id":2,"method":"tasks/frobnicate","params":{}}')).body).toMatchObject({
      id: 2,
      error: { code: -32601, message: expect.stringContaining('message/send') },
    });
    expect((await post('{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":[]}')).body.error.code).toBe(-32602);
    expect((await post('{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{}}')).body.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('params.id'),
    });
    expect(
      (await post('{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"kind":"message","role":"user","parts":[]}}}')).body.error.code,
    ).toBe(-32602);
    expect(
      (await post('{"jsonrpc":"2.0","id":6,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[]}}}')).body
        .error,
    ).toMatchObject({ code: -32602, message: expect.stringContaining('at least one part') });
    expect((await post('{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"nope"}}')).body.error.code).toBe(-32001);
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const nested = await post(
      `{"jsonrpc":"2.0","id":9,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}],"metadata":${deep}}}}`,
    );
    expect(nested.body.error).toMatchObject({ code: -32600, message: expect.stringContaining('nests deeper') });
    const big = await post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { id: 'x'.repeat(2 * 1024 * 1024) } }));
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ code: -32600, message: expect.stringContaining('limit') });
  });
});
