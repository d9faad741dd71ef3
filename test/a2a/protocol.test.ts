/**
 * The official @a2a-js/sdk client (A2A 1.0 and its 0.3 legacy transport) and raw JSON-RPC in both
 * versions against our server; agent card; streaming with exactly one final status.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TaskState } from '@a2a-js/sdk';
import type { Message, StreamResponse } from '@a2a-js/sdk';
import { Client, ClientFactory } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { closeAll, msg03, msg10, rpc, serve, sse, userMessage, V1 } from './helpers.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';

afterAll(closeAll);

const chatty: TaskExecutor = async (ctx, ev) => {
  ev.status('thinking about it');
  ev.thinkingChunk('hmm');
  ev.textChunk('echo: ');
  ev.artifact({ name: 'tool-call', data: { tool: 'echo', input: ctx.text } });
  ev.textChunk(ctx.text);
  return { state: 'completed', text: `echo: ${ctx.text}` };
};

const sendParams = (text: string) => ({
  tenant: '',
  message: userMessage(text),
  configuration: undefined,
  metadata: undefined,
});

describe('agent card', () => {
  it('carries both the A2A 0.3 and 1.0 field sets', async () => {
    const s = await serve(chatty, { card: { name: 'echoer', version: '1.2.3', description: 'echoes', skills: [{ id: 'echo' }] } });
    const r = await fetch(new URL('.well-known/agent-card.json', s.url));
    expect(r.status).toBe(200);
    const card = await r.json();
    // 1.0
    expect(card.supportedInterfaces).toEqual([
      { url: s.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: s.restUrl, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      { url: s.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    // 0.3
    expect(card).toMatchObject({ protocolVersion: '0.3.0', url: s.url, preferredTransport: 'JSONRPC' });
    // both
    expect(card).toMatchObject({
      name: 'echoer',
      version: '1.2.3',
      description: 'echoes',
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain', 'application/json'],
      defaultOutputModes: ['text/plain'],
    });
    expect(card.skills).toEqual([{ id: 'echo', name: 'echo', description: 'echo', tags: [] }]);
  });

  it('health probes answer', async () => {
    const s = await serve(chatty);
    expect((await fetch(new URL('healthz', s.url))).status).toBe(200);
    expect((await fetch(new URL('readyz', s.url))).status).toBe(200);
  });
});

describe('official SDK client, A2A 1.0', () => {
  it('sends, gets and streams', async () => {
    const s = await serve(chatty);
    const client = await new ClientFactory().createFromUrl(s.url);
    expect(client.protocolVersion).toBe('1.0');
    const r = await client.sendMessage(sendParams('hi'));
    expect('id' in r).toBe(true);
    const task = r as Exclude<typeof r, Message>;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const resp = task.artifacts.find((a) => a.name === 'response');
    expect(resp?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo: hi' });
    expect(task.artifacts.some((a) => a.name === 'tool-call')).toBe(true);

    const got = await client.getTask({ tenant: '', id: task.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.contextId).toBe(task.contextId);

    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream(sendParams('streamed'))) events.push(e);
    expect(events[0]?.payload?.$case).toBe('task');
    const finals = events.filter(
      (e) =>
        e.payload?.$case === 'statusUpdate' &&
        [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED].includes(
          e.payload.value.status!.state,
        ),
    );
    expect(finals).toHaveLength(1);
    expect(events.at(-1)).toBe(finals[0]);
    const kinds = events.map((e) => e.payload?.$case);
    expect(kinds).toContain('artifactUpdate');
  });

  it('keeps a client contextId and mints the task id', async () => {
    const s = await serve(chatty);
    const client = await new ClientFactory().createFromUrl(s.url);
    const m = userMessage('ctx');
    m.contextId = 'my-context';
    const r = (await client.sendMessage({ tenant: '', message: m, configuration: undefined, metadata: undefined })) as any;
    expect(r.contextId).toBe('my-context');
    expect(r.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('maps errors: unknown task is TaskNotFound (-32001)', async () => {
    const s = await serve(chatty);
    const client = await new ClientFactory().createFromUrl(s.url);
    await expect(client.getTask({ tenant: '', id: 'nope' })).rejects.toMatchObject({ name: 'TaskNotFoundError' });
  });
});

describe('official SDK client, A2A 0.3 (legacy transport)', () => {
  it('sends, gets and streams with exactly one final status', async () => {
    const s = await serve(chatty);
    const card = await new ClientFactory().createFromUrl(s.url).then((c) => c.getAgentCard());
    const client = new Client(new LegacyJsonRpcTransport({ endpoint: s.url }), card);
    expect(client.protocolVersion).toBe('0.3');
    const r = (await client.sendMessage(sendParams('old'))) as any;
    expect(r.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const got = await client.getTask({ tenant: '', id: r.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream(sendParams('old stream'))) events.push(e);
    const states = events.filter((e) => e.payload?.$case === 'statusUpdate').map((e: any) => e.payload.value.status.state);
    expect(states.filter((x) => x === TaskState.TASK_STATE_COMPLETED)).toHaveLength(1);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

describe('raw JSON-RPC shapes per version', () => {
  it('0.3 without header: kind discriminators, kebab states, final flag', async () => {
    const s = await serve(chatty);
    const { body } = await rpc(s.url, 'message/send', { message: msg03('x') });
    expect(body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    const events = await sse(s.url, 'message/stream', { message: msg03('y') });
    expect(events[0].result.kind).toBe('task');
    const statuses = events.map((e) => e.result).filter((r) => r.kind === 'status-update');
    expect(statuses.filter((r) => r.final)).toHaveLength(1);
    expect(statuses.at(-1)).toMatchObject({ final: true, status: { state: 'completed' } });
    expect(events.map((e) => e.result.kind)).toContain('artifact-update');
    // thinking chunks are streamed as their own artifact
    expect(events.some((e) => e.result.kind === 'artifact-update' && e.result.artifact.name === 'thinking')).toBe(true);
  });

  it('1.0 with header: wrapped results, TASK_STATE_* enums, no final flag', async () => {
    const s = await serve(chatty);
    const { body } = await rpc(s.url, 'SendMessage', { message: msg10('x') }, V1);
    expect(body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(body.result.task.kind).toBeUndefined();
    const got = await rpc(s.url, 'GetTask', { id: body.result.task.id }, V1);
    expect(got.body.result.id).toBe(body.result.task.id);
    const events = await sse(s.url, 'SendStreamingMessage', { message: msg10('y') }, V1);
    expect(Object.keys(events[0].result)).toEqual(['task']);
    const terminal = events.filter((e) => e.result.statusUpdate?.status.state === 'TASK_STATE_COMPLETED');
    expect(terminal).toHaveLength(1);
    expect(events.at(-1)).toBe(terminal[0]);
    expect(events.every((e) => !('final' in (e.result.statusUpdate ?? {})))).toBe(true);
  });

  it('1.0 names need the header; 0.3 names are refused under 1.0', async () => {
    const s = await serve(chatty);
    const a = await rpc(s.url, 'SendMessage', { message: msg10('x') });
    expect(a.body.error.code).toBe(-32601);
    expect(a.body.error.message).toContain('A2A-Version: 1.0');
    const b = await rpc(s.url, 'message/send', { message: msg03('x') }, V1);
    expect(b.body.error.code).toBe(-32601);
    const c = await rpc(s.url, 'message/send', { message: msg03('x') }, { 'A2A-Version': '2.0' });
    expect(c.body.error.code).toBe(-32009);
  });

  it('a message for a terminal task is an error, never a restart', async () => {
    const s = await serve(chatty);
    const { body } = await rpc(s.url, 'message/send', { message: msg03('x') });
    const again = await rpc(s.url, 'message/send', { message: msg03('again', { taskId: body.result.id }) });
    expect(again.body.error.code).toBe(-32004);
    expect(again.body.error.message).toMatch(/never restarted/);
    const unknown = await rpc(s.url, 'message/send', { message: msg03('u', { taskId: 'nope' }) });
    expect(unknown.body.error.code).toBe(-32001);
  });

  it('a failing executor ends the task failed without leaking a stack', async () => {
    const s = await serve(async () => {
      throw new Error('boom in the loop');
    });
    const { body } = await rpc(s.url, 'message/send', { message: msg03('x') });
    expect(body.result.status.state).toBe('failed');
    expect(body.result.status.message.parts[0].text).toBe('boom in the loop');
    expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
  });
});
