/**
 * Protocol edges an outside conformance check found (issue 14): ListTasks filters, order and
 * refusals; historyLength; content types the card does not accept; coerced non-string fields;
 * the card's ETag, version variants and query-parameter version; JSON-RPC notifications.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { closeAll, msg03, msg10, rpc, serve, V1 } from './helpers.ts';

afterAll(closeAll);

const echo: TaskExecutor = async (ctx) => ({ state: 'completed', text: ctx.text });

/** An executor that counts the tasks it started. */
function counting() {
  let started = 0;
  const exec: TaskExecutor = async (ctx) => {
    started++;
    return { state: 'completed', text: ctx.text };
  };
  return { exec, started: () => started };
}

const list = (url: string, params: Record<string, unknown>) => rpc(url, 'ListTasks', params, V1);

/**
 * Wait until the millisecond clock has moved on, so two status changes cannot share a timestamp
 * (A2A timestamps have millisecond precision). This waits for the clock, not for the code under test.
 */
async function nextMs(): Promise<void> {
  const t = Date.now();
  while (Date.now() === t) await new Promise((r) => setImmediate(r));
}

describe('ListTasks', () => {
  it('lists newest status first, and statusTimestampAfter keeps only later changes', async () => {
    const s = await serve(echo);
    const sent: any[] = [];
    for (const text of ['a', 'b', 'c']) {
      sent.push((await rpc(s.url, 'SendMessage', { message: msg10(text) }, V1)).body.result.task);
      await nextMs();
    }
    const [a, b, c] = sent;
    const all = (await list(s.url, {})).body.result;
    expect(all.tasks.map((t: any) => t.id)).toEqual([c.id, b.id, a.id]);
    const after = (await list(s.url, { statusTimestampAfter: b.status.timestamp })).body.result;
    expect(after.tasks.map((t: any) => t.id)).toEqual([c.id]);
    expect(after.totalSize).toBe(1);
  });

  it('orders by the last status change, not by creation', async () => {
    const s = await serve(async (_ctx, ev) => ({ state: 'completed', text: await ev.requestInput('more?') }));
    const first = (await rpc(s.url, 'SendMessage', { message: msg10('first') }, V1)).body.result.task;
    expect(first.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    await nextMs();
    const second = (await rpc(s.url, 'SendMessage', { message: msg10('second'), configuration: { returnImmediately: true } }, V1)).body.result.task;
    expect((await rpc(s.url, 'CancelTask', { id: second.id }, V1)).body.result.status.state).toBe('TASK_STATE_CANCELED');
    await nextMs();
    const reply = msg10('the rest', { taskId: first.id, contextId: first.contextId });
    expect((await rpc(s.url, 'SendMessage', { message: reply }, V1)).body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const order = (await list(s.url, {})).body.result.tasks.map((t: any) => t.id);
    expect(order).toEqual([first.id, second.id]);
    const done = (await list(s.url, { status: 'TASK_STATE_COMPLETED' })).body.result.tasks.map((t: any) => t.id);
    expect(done).toEqual([first.id]);
  });

  it.each([
    ['pageSize 0', { pageSize: 0 }, /pageSize/],
    ['pageSize 101', { pageSize: 101 }, /pageSize/],
    ['pageSize not a number', { pageSize: 'many' }, /pageSize/],
    ['pageSize fractional', { pageSize: 2.5 }, /pageSize/],
    ['unknown status', { status: 'TASK_STATE_NAPPING' }, /status/],
    ['timestamp not a date', { statusTimestampAfter: 'yesterday' }, /statusTimestampAfter/],
    ['timestamp without zone', { statusTimestampAfter: '2026-01-01T00:00:00' }, /statusTimestampAfter/],
    ['garbage pageToken', { pageToken: 'not-a-token' }, /token/i],
    ['negative historyLength', { historyLength: -1 }, /historyLength/],
  ])('refuses %s with -32602', async (_name, params, message) => {
    const s = await serve(echo);
    await rpc(s.url, 'SendMessage', { message: msg10('x') }, V1);
    const { body } = await list(s.url, params);
    expect(body.error?.code).toBe(-32602);
    expect(body.error.message).toMatch(message);
  });

  it('pages through every task with nextPageToken', async () => {
    const s = await serve(echo);
    const sent: string[] = [];
    for (let i = 0; i < 5; i++) sent.push((await rpc(s.url, 'SendMessage', { message: msg10(`t${i}`) }, V1)).body.result.task.id);
    const seen: string[] = [];
    let token = '';
    for (;;) {
      const r = (await list(s.url, { pageSize: 2, ...(token ? { pageToken: token } : {}) })).body.result;
      expect(r.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...r.tasks.map((t: any) => t.id));
      if (!r.nextPageToken) break;
      token = r.nextPageToken;
    }
    expect(seen.sort()).toEqual(sent.sort());
  });
});

describe('historyLength', () => {
  it('a negative historyLength is refused by GetTask (1.0 and 0.3) with -32602', async () => {
    const s = await serve(echo);
    const t = (await rpc(s.url, 'SendMessage', { message: msg10('h') }, V1)).body.result.task;
    const v1 = await rpc(s.url, 'GetTask', { id: t.id, historyLength: -1 }, V1);
    expect(v1.body.error?.code).toBe(-32602);
    expect(v1.body.error.message).toMatch(/historyLength/);
    const v03 = await rpc(s.url, 'tasks/get', { id: t.id, historyLength: -3 });
    expect(v03.body.error?.code).toBe(-32602);
    expect((await rpc(s.url, 'GetTask', { id: t.id, historyLength: 0 }, V1)).body.result.history ?? []).toEqual([]);
  });
});

describe('message content', () => {
  it('a message whose parts match none of the input modes gets ContentTypeNotSupportedError (-32005)', async () => {
    const s = await serve(echo);
    const png = {
      messageId: crypto.randomUUID(),
      role: 'ROLE_USER',
      parts: [{ raw: Buffer.from('png').toString('base64'), mediaType: 'image/png', filename: 'a.png' }],
    };
    const v1 = await rpc(s.url, 'SendMessage', { message: png }, V1);
    expect(v1.body.error?.code).toBe(-32005);
    expect(v1.body.error.message).toContain('image/png');
    const file03 = msg03('', { parts: [{ kind: 'file', file: { bytes: 'cG5n', mimeType: 'image/png', name: 'a.png' } }] });
    const v03 = await rpc(s.url, 'message/send', { message: file03 });
    expect(v03.body.error?.code).toBe(-32005);
    // A text part next to the image is enough.
    const mixed = { ...png, parts: [...png.parts, { text: 'describe it' }] };
    expect((await rpc(s.url, 'SendMessage', { message: mixed }, V1)).body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it.each([
    ['text is an object (1.0)', 'SendMessage', V1, msg10('x', { parts: [{ text: { a: 1 } }] }), /parts\[0\]\.text must be a string/],
    ['text is a number (0.3)', 'message/send', {}, msg03('x', { parts: [{ kind: 'text', text: 42 }] }), /parts\[0\]\.text must be a string/],
    ['contextId is an object (1.0)', 'SendMessage', V1, msg10('x', { contextId: { id: 1 } }), /contextId must be a string/],
    ['contextId is a number (0.3)', 'message/send', {}, msg03('x', { contextId: 7 }), /contextId must be a string/],
    ['messageId is a number', 'SendMessage', V1, msg10('x', { messageId: 5 }), /messageId must be a string/],
  ])('%s is refused with -32602, not echoed back', async (_n, method, headers, message, re) => {
    const s = await serve(echo);
    const { body } = await rpc(s.url, method, { message }, headers);
    expect(body.error?.code).toBe(-32602);
    expect(body.error.message).toMatch(re);
    expect(s.stats().tasks).toBe(0);
  });
});

describe('agent card', () => {
  it('has an ETag, answers If-None-Match with 304, and varies by version', async () => {
    const s = await serve(echo);
    const cardUrl = new URL('.well-known/agent-card.json', s.url);
    const r = await fetch(cardUrl);
    const etag = r.headers.get('etag');
    expect(etag).toMatch(/^".+"$/);
    expect(r.headers.get('vary')).toMatch(/A2A-Version/i);
    await r.json();
    const again = await fetch(cardUrl, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const other = await fetch(cardUrl, { headers: { 'if-none-match': '"something-else"' } });
    expect(other.status).toBe(200);
    const strict = await fetch(cardUrl, { headers: { 'A2A-Version': '1.0', 'if-none-match': etag! } });
    expect(strict.status).toBe(200);
    expect(strict.headers.get('etag')).not.toBe(etag);
  });

  it('a strict 1.0 client (header or ?A2A-Version=1.0) gets a card without the 0.3-only fields; a 0.3 client gets them', async () => {
    const s = await serve(echo);
    const cardUrl = new URL('.well-known/agent-card.json', s.url);
    const legacy = await (await fetch(cardUrl)).json();
    expect(legacy).toMatchObject({ protocolVersion: '0.3.0', url: s.url, preferredTransport: 'JSONRPC' });
    expect(legacy.additionalInterfaces).toBeDefined();
    for (const strict of [await (await fetch(cardUrl, { headers: V1 })).json(), await (await fetch(`${cardUrl}?A2A-Version=1.0`)).json()]) {
      for (const f of ['protocolVersion', 'url', 'preferredTransport', 'additionalInterfaces']) expect(strict).not.toHaveProperty(f);
      expect(strict.supportedInterfaces[0]).toMatchObject({ protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
      expect(strict).toMatchObject({ name: legacy.name, version: legacy.version, skills: legacy.skills, capabilities: legacy.capabilities });
    }
  });
});

describe('version in the query', () => {
  it('?A2A-Version=1.0 selects 1.0 method names without the header', async () => {
    const s = await serve(echo);
    const url = `${s.url}?A2A-Version=1.0`;
    const { body } = await rpc(url, 'SendMessage', { message: msg10('q') });
    expect(body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const old = await rpc(url, 'message/send', { message: msg03('q') });
    expect(old.body.error.code).toBe(-32601);
    const bad = await rpc(`${s.url}?A2A-Version=7.0`, 'SendMessage', { message: msg10('q') });
    expect(bad.body.error.code).toBe(-32009);
  });
});

describe('JSON-RPC notifications', () => {
  it('a request without id gets no answer, and a notification message/send runs no task', async () => {
    const g = counting();
    const s = await serve(g.exec);
    for (const [method, message, headers] of [
      ['message/send', msg03('quiet'), {}],
      ['SendMessage', msg10('quiet'), V1],
    ] as const) {
      const r = await fetch(s.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', method, params: { message } }),
      });
      expect(r.status).toBe(204);
      expect(await r.text()).toBe('');
    }
    // A later request with an id is answered, and it is the first task the server ever made.
    const { body } = await rpc(s.url, 'ListTasks', {}, V1);
    expect(body.result.tasks).toEqual([]);
    expect(g.started()).toBe(0);
    expect(s.stats().tasks).toBe(0);
  });
});
