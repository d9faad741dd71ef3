/**
 * One behaviour suite, run over each binding the card advertises: JSON-RPC, HTTP+JSON (REST) and
 * gRPC, each driven by the official @a2a-js/sdk client restricted to that one transport.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client, type TransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import type { A2AServer } from '../../runtime/a2a/server/server.ts';
import { closeAll, serve, userMessage } from './helpers.ts';

afterAll(closeAll);

const BINDINGS: Array<[string, () => TransportFactory]> = [
  ['JSONRPC', () => new JsonRpcTransportFactory()],
  ['HTTP+JSON', () => new RestTransportFactory()],
  ['GRPC', () => new GrpcTransportFactory()],
];

const FINAL = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED];

const send = (text: string, extra: Partial<Message> = {}, returnImmediately = false) => ({
  tenant: '',
  message: userMessage(text, extra),
  configuration: returnImmediately
    ? { acceptedOutputModes: [], historyLength: undefined, returnImmediately: true, taskPushNotificationConfig: undefined }
    : undefined,
  metadata: undefined,
});

/** A chatty executor; `ask` asks for input; `wait` waits until canceled. */
const exec: TaskExecutor = async (ctx, ev) => {
  if (ctx.text === 'ask') return { state: 'completed', text: `got ${await ev.requestInput('which one?')}` };
  if (ctx.text === 'wait') {
    await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r()));
    return { state: 'completed', text: 'ignored' };
  }
  ev.status('working on it');
  ev.textChunk('echo: ');
  ev.textChunk(ctx.text);
  return { state: 'completed', text: `echo: ${ctx.text}` };
};

async function clientFor(s: A2AServer, binding: string, factory: () => TransportFactory): Promise<Client> {
  const client = await new ClientFactory({ transports: [factory()], preferredTransports: [binding] }).createFromUrl(s.url);
  return client;
}

const responseText = (t: Task) => {
  const c = t.artifacts.find((a) => a.name === 'response')?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : undefined;
};

let shared: A2AServer | undefined;
async function server(): Promise<A2AServer> {
  shared ??= await serve(exec, { grpcPort: 0 });
  return shared;
}

describe('the card advertises every binding', () => {
  it('lists JSON-RPC, HTTP+JSON and gRPC interfaces for 1.0', async () => {
    const s = await server();
    const card = await (await fetch(new URL('.well-known/agent-card.json', s.url), { headers: { 'A2A-Version': '1.0' } })).json();
    const ifaces = card.supportedInterfaces.map((i: any) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
    expect(ifaces).toEqual([`JSONRPC 1.0 ${s.url}`, `HTTP+JSON 1.0 ${s.restUrl}`, `GRPC 1.0 ${s.grpcAddress}`, `JSONRPC 0.3 ${s.url}`]);
  });
});

describe.each(BINDINGS)('binding %s', (binding, factory) => {
  it('sends a message and gets the completed task, then reads it back', async () => {
    const client = await clientFor(await server(), binding, factory);
    const r = await client.sendMessage(send('hello'));
    const task = r as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(responseText(task)).toBe('echo: hello');
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.contextId).toBe(task.contextId);
  });

  it('streams: the task first, chunks, exactly one final status last', async () => {
    const client = await clientFor(await server(), binding, factory);
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream(send('streamed'))) events.push(e);
    expect(events[0]?.payload?.$case).toBe('task');
    const finals = events.filter((e) => e.payload?.$case === 'statusUpdate' && FINAL.includes(e.payload.value.status!.state));
    expect(finals).toHaveLength(1);
    expect(events.at(-1)).toBe(finals[0]);
    expect(events.some((e) => e.payload?.$case === 'artifactUpdate')).toBe(true);
  });

  it('request-input: the reply with the taskId completes the task', async () => {
    const client = await clientFor(await server(), binding, factory);
    const first = (await client.sendMessage(send('ask'))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const done = (await client.sendMessage(send('the blue one', { taskId: first.id, contextId: first.contextId }))) as Task;
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(responseText(done)).toBe('got the blue one');
  });

  it('cancels a running task, and resubscribing to it is refused once it ended', async () => {
    const client = await clientFor(await server(), binding, factory);
    const t = (await client.sendMessage(send('wait', {}, true))) as Task;
    const canceled = await client.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.cancelTask({ tenant: '', id: t.id, metadata: undefined })).rejects.toMatchObject({ name: 'TaskNotCancelableError' });
    const resub = async () => {
      for await (const _ of client.resubscribeTask({ tenant: '', id: t.id })) void _;
    };
    await expect(resub()).rejects.toMatchObject({ name: 'UnsupportedOperationError' });
  });

  it('resubscribes to a task waiting for input: the current task comes first', async () => {
    const client = await clientFor(await server(), binding, factory);
    const t = (await client.sendMessage(send('ask'))) as Task;
    const it = client.resubscribeTask({ tenant: '', id: t.id })[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value?.payload?.$case).toBe('task');
    expect((first.value?.payload?.value as Task | undefined)?.id).toBe(t.id);
    await client.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    const rest: StreamResponse[] = [];
    for (;;) {
      const n = await it.next();
      if (n.done) break;
      rest.push(n.value);
    }
    const last = rest.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' ? last.value.status?.state : undefined).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('lists tasks newest first and refuses a bad pageSize', async () => {
    const client = await clientFor(await server(), binding, factory);
    const a = (await client.sendMessage(send('list-a'))) as Task;
    const listed = await client.listTasks({
      tenant: '',
      contextId: a.contextId,
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 10,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    });
    expect(listed.tasks.map((t) => t.id)).toEqual([a.id]);
    await expect(
      client.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageSize: 500,
        pageToken: '',
        historyLength: undefined,
        statusTimestampAfter: undefined,
        includeArtifacts: false,
      }),
    ).rejects.toMatchObject({ message: expect.stringMatching(/pageSize/) });
  });

  it('an unknown task is TaskNotFoundError', async () => {
    const client = await clientFor(await server(), binding, factory);
    await expect(client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined })).rejects.toMatchObject({ name: 'TaskNotFoundError' });
  });

  it('a message with only an image part is ContentTypeNotSupportedError', async () => {
    const client = await clientFor(await server(), binding, factory);
    const m = userMessage('x');
    m.parts = [{ content: { $case: 'raw', value: Buffer.from('png') }, metadata: undefined, filename: 'a.png', mediaType: 'image/png' }];
    await expect(client.sendMessage({ tenant: '', message: m, configuration: undefined, metadata: undefined })).rejects.toMatchObject({
      name: 'ContentTypeNotSupportedError',
    });
  });
});
