/**
 * gRPC on the A2A port (`grpcPort: 'same'`, what every Capsule on Kubernetes runs): the official
 * SDK's gRPC client (grpc-js) dials the A2A URL's host:port and is served there, beside JSON-RPC
 * and HTTP+JSON, behind the same authentication, connection limits and activity count; what is
 * neither HTTP/1.1 nor the h2c preface is answered or closed cleanly.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import { authorityOf, type A2AServer } from '../../runtime/a2a/server/server.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { ActivityTracker } from '../../runtime/telemetry/activity.ts';
import { closeAll, msg10, rpc, serve, userMessage, V1 } from './helpers.ts';

afterAll(closeAll);

const KEY = `alice-${crypto.randomUUID()}`;
const as = (key: string) => ({ serviceParameters: { authorization: `Bearer ${key}` } });
const send = (text: string, extra: Partial<Message> = {}) => ({ tenant: '', message: userMessage(text, extra), configuration: undefined, metadata: undefined });

/** Lets a test hold a task in its executor until it opens the gate. */
function gate() {
  let open!: () => void;
  let arrived!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const arrival = new Promise<void>((r) => (arrived = r));
  return { open, arrival, hold: async () => (arrived(), await opened) };
}
let held = gate();

const exec: TaskExecutor = async (ctx, ev) => {
  if (ctx.text === 'hold') await held.hold();
  ev.status('working on it');
  ev.textChunk('echo: ');
  ev.textChunk(ctx.text);
  return { state: 'completed', text: `echo: ${ctx.text}` };
};

const activity = new ActivityTracker();
let shared: A2AServer | undefined;
const server = async () =>
  (shared ??= await serve(exec, {
    grpcPort: 'same',
    activity,
    auth: createAuthenticator({ apiKeys: [{ name: 'alice', key: KEY }], anonymous: false }),
  }));

const grpcClient = async (s: A2AServer): Promise<Client> =>
  new ClientFactory({ transports: [new GrpcTransportFactory()], preferredTransports: ['GRPC'] }).createFromUrl(s.url);

const responseText = (t: Task) => {
  const c = t.artifacts.find((a) => a.name === 'response')?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : undefined;
};

/** Everything a raw TCP connection to the server receives after writing `bytes`, until the server closes it. */
function rawExchange(url: string, bytes: Buffer | string): Promise<Buffer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(u.port), u.hostname, () => socket.write(bytes));
    socket.on('data', (d) => chunks.push(d));
    socket.once('error', reject);
    socket.once('close', () => resolve(Buffer.concat(chunks)));
  });
}

describe('the card of a server with gRPC on the A2A port', () => {
  it("lists the gRPC interface at the A2A URL's host and port, for 1.0", async () => {
    const s = await server();
    const u = new URL(s.url);
    expect(s.grpcAddress).toBe(`${u.hostname}:${u.port}`);
    const card = await (await fetch(new URL('.well-known/agent-card.json', s.url), { headers: V1 })).json();
    const ifaces = card.supportedInterfaces.map(
      (i: { protocolBinding: string; protocolVersion: string; url: string }) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`,
    );
    expect(ifaces).toEqual([`JSONRPC 1.0 ${s.url}`, `HTTP+JSON 1.0 ${s.restUrl}`, `GRPC 1.0 ${u.hostname}:${u.port}`, `JSONRPC 0.3 ${s.url}`]);
  });

  it('advertises the public URL’s host and port, its default port spelled out', () => {
    expect(authorityOf('http://cap.ns.svc.cluster.local:8080/')).toBe('cap.ns.svc.cluster.local:8080');
    expect(authorityOf('http://cap.ns.svc/')).toBe('cap.ns.svc:80');
    expect(authorityOf('https://agents.example.com/cap/')).toBe('agents.example.com:443');
    expect(authorityOf('http://[::1]:9000/')).toBe('[::1]:9000');
  });
});

describe('gRPC calls on the A2A port', () => {
  it('SendMessage answers the completed task and GetTask reads it back, with an API key', async () => {
    const c = await grpcClient(await server());
    const task = (await c.sendMessage(send('hello'), as(KEY))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(responseText(task)).toBe('echo: hello');
    const got = await c.getTask({ tenant: '', id: task.id, historyLength: undefined }, as(KEY));
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.contextId).toBe(task.contextId);
  });

  it('SendStreamingMessage streams the task, chunks and one final status', async () => {
    const c = await grpcClient(await server());
    const events: StreamResponse[] = [];
    for await (const e of c.sendMessageStream(send('streamed'), as(KEY))) events.push(e);
    expect(events[0]?.payload?.$case).toBe('task');
    expect(events.some((e) => e.payload?.$case === 'artifactUpdate')).toBe(true);
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' ? last.value.status?.state : undefined).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('refuses a call without credentials or with a wrong key UNAUTHENTICATED, and starts no task', async () => {
    const s = await server();
    const c = await grpcClient(s);
    const before = s.stats().tasks;
    await expect(c.sendMessage(send('x'))).rejects.toThrow(/authentication required/);
    await expect(c.sendMessage(send('x'), as('not-a-key'))).rejects.toThrow(/invalid credentials/);
    expect(s.stats().tasks).toBe(before);
  });

  it.each([
    ['on the A2A port', async () => ({ s: await server(), tracker: activity })],
    [
      'on a port of its own, alike',
      async () => {
        const tracker = new ActivityTracker();
        const auth = createAuthenticator({ apiKeys: [{ name: 'alice', key: KEY }], anonymous: false });
        return { s: await serve(exec, { grpcPort: 0, activity: tracker, auth }), tracker };
      },
    ],
  ])('an open gRPC call keeps the capsule busy (the activity count) until it is answered, %s', async (_where, make) => {
    const { s, tracker } = await make();
    held = gate();
    const c = await grpcClient(s);
    const answer = c.sendMessage(send('hold'), as(KEY));
    await held.arrival;
    // The call and its task.
    expect(tracker.open).toBe(2);
    expect(tracker.idleSeconds()).toBe(0);
    held.open();
    expect(((await answer) as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(tracker.open).toBe(0);
  });
});

describe('the HTTP bindings on the same port', () => {
  it('JSON-RPC and HTTP+JSON are still served, with the same key', async () => {
    const s = await server();
    const auth = { authorization: `Bearer ${KEY}` };
    const r = await rpc(s.url, 'SendMessage', { message: msg10('over json-rpc') }, { ...V1, ...auth });
    expect(r.status).toBe(200);
    expect(r.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const rest = await fetch(new URL('rest/message:send', s.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...V1, ...auth },
      body: JSON.stringify({ message: msg10('over rest') }),
    });
    expect(rest.status).toBe(200);
    expect((await rest.json()).task.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await rpc(s.url, 'SendMessage', { message: msg10('no key') }, V1)).status).toBe(401);
  });
});

describe('what is neither HTTP/1.1 nor gRPC', () => {
  it('a garbage first byte (a TLS ClientHello) is answered 400 by the HTTP server and the connection closed', async () => {
    const got = (await rawExchange((await server()).url, Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00]))).toString('latin1');
    expect(got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(got).toMatch(/malformed HTTP request/);
  });

  it('a line that starts like the preface and departs from it is HTTP/1.1’s to refuse', async () => {
    const got = (await rawExchange((await server()).url, 'PRIVATE / HTTP/1.1\r\n\r\n')).toString('latin1');
    expect(got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  });

  it('the h2c preface followed by garbage is sent a GOAWAY and closed', async () => {
    const got = await rawExchange((await server()).url, Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), Buffer.alloc(24, 0xff)]));
    // Frames: 9-byte headers (length, type, flags, stream); type 0x7 is GOAWAY.
    const types: number[] = [];
    for (let i = 0; i + 9 <= got.length; i += 9 + got.readUIntBE(i, 3)) types.push(got[i + 3]!);
    expect(types).toContain(0x7);
  });

  it('a connection that says nothing within the headers budget is closed', async () => {
    const s = await serve(exec, { grpcPort: 'same', limits: { headersTimeoutMs: 200, requestTimeoutMs: 200 } });
    const u = new URL(s.url);
    const socket = net.connect(Number(u.port), u.hostname);
    const closed = new Promise<boolean>((r) => socket.once('close', r));
    socket.on('data', () => undefined);
    expect(await closed).toBe(false);
  });
});

describe('connection limits count h2c connections', () => {
  it('with one connection per client, an open gRPC connection leaves an HTTP request 503', async () => {
    const s = await serve(exec, { grpcPort: 'same', limits: { maxConnectionsPerClient: 1 } });
    const session = http2.connect(`http://${s.grpcAddress}`);
    const settings = new Promise<void>((r) => session.once('remoteSettings', () => r()));
    await settings; // served by grpc-js: the connection is open and counted
    try {
      const got = (await rawExchange(s.url, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n')).toString('latin1');
      expect(got).toMatch(/^HTTP\/1\.1 503 /);
      expect(got).toMatch(/too many connections/);
    } finally {
      session.destroy();
    }
  });

  it('a gRPC message over the body limit is refused RESOURCE_EXHAUSTED', async () => {
    const s = await serve(exec, { grpcPort: 'same', maxBodyBytes: 1024 });
    const c = await grpcClient(s);
    await expect(c.sendMessage(send('x'.repeat(4096)))).rejects.toMatchObject({ cause: { code: grpc.status.RESOURCE_EXHAUSTED } });
  });
});
