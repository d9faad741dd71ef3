/**
 * Callers who prove who they are (bearer API keys), over every binding: missing and wrong
 * credentials are refused; each caller sees, lists, cancels and resubscribes to its own tasks
 * only; the card says how to authenticate; the key is never echoed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client, type TransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import type { A2AServer } from '../../runtime/a2a/server/server.ts';
import { closeAll, msg10, serve, userMessage } from './helpers.ts';

afterAll(closeAll);

const ALICE = `alice-${crypto.randomUUID()}`;
const BOB = `bob-${crypto.randomUUID()}`;

const exec: TaskExecutor = async (ctx, ev) => {
  if (ctx.text === 'ask') return { state: 'completed', text: await ev.requestInput('more?') };
  return { state: 'completed', text: `hi ${ctx.text}` };
};

let shared: A2AServer | undefined;
async function server(): Promise<A2AServer> {
  shared ??= await serve(exec, {
    grpcPort: 0,
    auth: createAuthenticator({
      apiKeys: [
        { name: 'alice', key: ALICE },
        { name: 'bob', key: BOB },
      ],
      anonymous: false,
    }),
  });
  return shared;
}

const BINDINGS: Array<[string, () => TransportFactory]> = [
  ['JSONRPC', () => new JsonRpcTransportFactory()],
  ['HTTP+JSON', () => new RestTransportFactory()],
  ['GRPC', () => new GrpcTransportFactory()],
];

const send = (text: string) => ({ tenant: '', message: userMessage(text), configuration: undefined, metadata: undefined });
const as = (key: string) => ({ serviceParameters: { authorization: `Bearer ${key}` } });
const listAll = {
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: 100,
  pageToken: '',
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: false,
};

describe('the agent card says how to authenticate', () => {
  it('offers bearer API keys, in the 1.0 and the 0.3 form, and requires one', async () => {
    const s = await server();
    const cardUrl = new URL('.well-known/agent-card.json', s.url);
    const v1 = await (await fetch(cardUrl, { headers: { 'A2A-Version': '1.0' } })).json();
    expect(v1.securitySchemes).toEqual({ apiKey: { httpAuthSecurityScheme: expect.objectContaining({ scheme: 'Bearer' }) } });
    expect(v1.securityRequirements).toEqual([{ schemes: { apiKey: { list: [] } } }]);
    const v03 = await (await fetch(cardUrl)).json();
    expect(v03.securitySchemes).toEqual({ apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }) });
    expect(v03.security).toEqual([{ apiKey: [] }]);
  });
});

describe('raw HTTP refusals', () => {
  it.each([
    ['JSON-RPC', '', { 'A2A-Version': '1.0' }, () => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: msg10('x') } })],
    ['HTTP+JSON', 'rest/message:send', { 'A2A-Version': '1.0' }, () => JSON.stringify({ message: msg10('x') })],
  ])('%s: missing and wrong keys get 401 with WWW-Authenticate, and the key is never echoed', async (_n, path, headers, body) => {
    const s = await server();
    const url = new URL(path, s.url);
    const before = s.stats().tasks;
    for (const auth of [undefined, 'Bearer wrong-key', `Bearer ${ALICE}x`, 'Basic YWxpY2U6cHc=', 'Bearer']) {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers, ...(auth ? { authorization: auth } : {}) },
        body: body(),
      });
      const text = await r.text();
      expect(r.status, `${auth}`).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(text).toMatch(auth ? /invalid credentials/ : /authentication required/);
      expect(text).not.toContain('wrong-key');
      expect(text).not.toContain(ALICE);
    }
    expect(s.stats().tasks).toBe(before);
  });
});

describe.each(BINDINGS)('binding %s', (binding, factory) => {
  async function client(): Promise<Client> {
    return new ClientFactory({ transports: [factory()], preferredTransports: [binding] }).createFromUrl((await server()).url);
  }

  it('refuses a call without credentials and with a wrong key', async () => {
    const c = await client();
    await expect(c.sendMessage(send('x'))).rejects.toThrow(/authentication required|401|UNAUTHENTICATED|Unauthenticated/i);
    await expect(c.sendMessage(send('x'), as('not-a-key'))).rejects.toThrow(/invalid credentials|401|UNAUTHENTICATED|Unauthenticated/i);
  });

  it('one caller cannot read, list, cancel or resubscribe to another caller’s task', async () => {
    const c = await client();
    const mine = (await c.sendMessage(send('ask'), as(ALICE))) as Task;
    expect(mine.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect((await c.getTask({ tenant: '', id: mine.id, historyLength: undefined }, as(ALICE))).id).toBe(mine.id);
    await expect(c.getTask({ tenant: '', id: mine.id, historyLength: undefined }, as(BOB))).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(c.cancelTask({ tenant: '', id: mine.id, metadata: undefined }, as(BOB))).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    const resub = async () => {
      for await (const _ of c.resubscribeTask({ tenant: '', id: mine.id }, as(BOB))) void _;
    };
    await expect(resub()).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    // A reply from another caller cannot answer Alice's question either.
    const reply = { ...userMessage('from bob'), taskId: mine.id, contextId: mine.contextId };
    await expect(c.sendMessage({ tenant: '', message: reply, configuration: undefined, metadata: undefined }, as(BOB))).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    expect((await c.listTasks(listAll, as(BOB))).tasks.map((t) => t.id)).not.toContain(mine.id);
    expect((await c.listTasks(listAll, as(ALICE))).tasks.map((t) => t.id)).toContain(mine.id);
    expect((await c.cancelTask({ tenant: '', id: mine.id, metadata: undefined }, as(ALICE))).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });
});

describe('anonymous access', () => {
  it('only where configured: then callers without credentials share one anonymous scope, and keys still separate', async () => {
    const s = await serve(exec, { auth: createAuthenticator({ apiKeys: [{ name: 'alice', key: ALICE }], anonymous: true }) });
    const c = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(s.url);
    const anon = (await c.sendMessage(send('x'))) as Task;
    expect(anon.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await c.getTask({ tenant: '', id: anon.id, historyLength: undefined })).id).toBe(anon.id);
    await expect(c.getTask({ tenant: '', id: anon.id, historyLength: undefined }, as(ALICE))).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(c.sendMessage(send('x'), as('bad'))).rejects.toThrow();
    const card = await (await fetch(new URL('.well-known/agent-card.json', s.url), { headers: { 'A2A-Version': '1.0' } })).json();
    expect(card.securityRequirements).toEqual([]);
  });
});
