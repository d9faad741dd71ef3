/**
 * Push notifications: configs through the store seam (scoped per caller), webhook URLs held to
 * the capsule's network allowlist (no connection is made to a refused URL), delivery with retries
 * and backoff, one span per attempt. A real HTTP receiver stands in for the webhook.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { InMemoryPushNotificationStore, type PushNotificationStore } from '@a2a-js/sdk/server';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { closeAll, msg10, rpc, serve, V1 } from './helpers.ts';

const receivers: http.Server[] = [];
afterAll(async () => {
  await closeAll();
  for (const r of receivers) r.close();
});

/** A webhook that records deliveries; the first `failFirst` requests get 503. */
async function receiver(failFirst = 0) {
  const got: Array<{ headers: http.IncomingHttpHeaders; body: any }> = [];
  let requests = 0;
  let connections = 0;
  const waiters: Array<() => void> = [];
  const srv = http.createServer((req, res) => {
    let b = '';
    req.on('data', (d) => (b += d));
    req.on('end', () => {
      requests++;
      if (requests <= failFirst) {
        res.statusCode = 503;
        res.end();
        return;
      }
      got.push({ headers: req.headers, body: JSON.parse(b) });
      res.end();
      for (const w of waiters.splice(0)) w();
    });
  });
  srv.on('connection', () => connections++);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  receivers.push(srv);
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
  const until = (pred: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => (pred() ? resolve() : waiters.push(check));
      check();
    });
  return { url, host: new URL(url).host, got, requests: () => requests, connections: () => connections, until };
}

/** Waits until released by a message 'go' (request-input), so configs can be set mid-task. */
const held: TaskExecutor = async (ctx, ev) => ({ state: 'completed', text: `done ${ctx.text} ${await ev.requestInput('go?')}` });

const finalState = (deliveries: Array<{ body: any }>) => deliveries.map((d) => d.body.statusUpdate?.status?.state).filter(Boolean);

describe('push notifications', () => {
  it('the card says pushNotifications: true; a config set on a task gets its status updates with the token', async () => {
    const hook = await receiver();
    const s = await serve(held, { push: { allow: [hook.host], backoffMs: 5 } });
    const card = await (await fetch(new URL('.well-known/agent-card.json', s.url), { headers: V1 })).json();
    expect(card.capabilities.pushNotifications).toBe(true);
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('job') }, V1)).body.result.task;
    const set = await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: hook.url, token: 'tok-123' }, V1);
    expect(set.body.result).toMatchObject({ taskId: task.id, url: hook.url, token: 'tok-123' });
    expect(set.body.result.id).toMatch(/.+/);
    const reply = msg10('go', { taskId: task.id, contextId: task.contextId });
    expect((await rpc(s.url, 'SendMessage', { message: reply }, V1)).body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await hook.until(() => finalState(hook.got).includes('TASK_STATE_COMPLETED'));
    expect(finalState(hook.got)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(hook.got.every((d) => d.headers['x-a2a-notification-token'] === 'tok-123')).toBe(true);
    expect(hook.got.every((d) => d.headers['content-type'] === 'application/a2a+json')).toBe(true);
    const artifact = hook.got.find((d) => d.body.artifactUpdate)?.body.artifactUpdate;
    expect(artifact.artifact.parts[0].text).toBe('done job go');
    // Read back, list, delete.
    const list = await rpc(s.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, V1);
    expect(list.body.result.configs.map((c: any) => c.id)).toEqual([set.body.result.id]);
    const got = await rpc(s.url, 'GetTaskPushNotificationConfig', { taskId: task.id, id: set.body.result.id }, V1);
    expect(got.body.result.url).toBe(hook.url);
    await rpc(s.url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: set.body.result.id }, V1);
    expect((await rpc(s.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, V1)).body.result.configs ?? []).toEqual([]);
  });

  it('a task’s streamed steps are not pushed; its kept artifacts and answer are', async () => {
    const hook = await receiver();
    const stepping: TaskExecutor = async (ctx, ev) => {
      const reply = await ev.requestInput('go?');
      ev.step({ event_type: 'tool_call', tool_name: 'echo', status: 'ok', duration_ms: 3 });
      ev.artifact({ name: 'kept', text: 'a kept artifact' });
      return { state: 'completed', text: `done ${ctx.text} ${reply}` };
    };
    const s = await serve(stepping, { push: { allow: [hook.host], backoffMs: 5 } });
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('job') }, V1)).body.result.task;
    await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: hook.url, token: 't' }, V1);
    await rpc(s.url, 'SendMessage', { message: msg10('go', { taskId: task.id, contextId: task.contextId }) }, V1);
    // Deliveries of one task go in order: once the final status is in, every earlier one is too.
    await hook.until(() => finalState(hook.got).includes('TASK_STATE_COMPLETED'));
    const artifacts = hook.got.map((d) => d.body.artifactUpdate?.artifact?.name).filter(Boolean);
    expect(artifacts).toEqual(['kept', 'response']);
  });

  it('a config in SendMessage configuration is set before the task runs', async () => {
    const hook = await receiver();
    const s = await serve(async (ctx) => ({ state: 'completed', text: ctx.text }), { push: { allow: [hook.host], backoffMs: 5 } });
    const r = await rpc(s.url, 'SendMessage', { message: msg10('now'), configuration: { taskPushNotificationConfig: { url: hook.url } } }, V1);
    expect(r.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await hook.until(() => finalState(hook.got).includes('TASK_STATE_COMPLETED'));
    expect(finalState(hook.got)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
  });

  it('a webhook outside the capsule’s network allowlist is refused with -32602, and never contacted', async () => {
    const hook = await receiver();
    const s = await serve(held, { push: { allow: ['api.example.com'] } });
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('job') }, V1)).body.result.task;
    for (const url of [hook.url, 'http://10.0.0.1/hook', 'http://kubernetes.default.svc/api', 'file:///etc/passwd', 'not a url']) {
      const r = await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url }, V1);
      expect(r.body.error?.code, url).toBe(-32602);
    }
    const viaSend = await rpc(s.url, 'SendMessage', { message: msg10('x'), configuration: { taskPushNotificationConfig: { url: hook.url } } }, V1);
    expect(viaSend.body.error?.code).toBe(-32602);
    expect(viaSend.body.error.message).toContain('not in capabilities.network.allow');
    await rpc(s.url, 'CancelTask', { id: task.id }, V1);
    await s.pushIdle();
    expect(hook.connections()).toBe(0);
  });

  it('delivery is retried with backoff, and each attempt is a span', async () => {
    const hook = await receiver(2);
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const s = await serve(async () => ({ state: 'completed', text: 'ok' }), { push: { allow: [hook.host], backoffMs: 5, tracer: provider.getTracer('test') } });
    await rpc(s.url, 'SendMessage', { message: msg10('x'), configuration: { taskPushNotificationConfig: { url: hook.url } } }, V1);
    await hook.until(() => finalState(hook.got).includes('TASK_STATE_COMPLETED'));
    await s.pushIdle();
    expect(finalState(hook.got)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    const spans = exporter.getFinishedSpans().filter((sp) => sp.name === 'a2a.push.deliver');
    // The first event needed three attempts (two 503s), every later one a single attempt.
    expect(spans.slice(0, 3).map((sp) => sp.attributes['murmur.push.attempt'])).toEqual([1, 2, 3]);
    expect(spans.slice(0, 3).map((sp) => sp.attributes['http.response.status_code'])).toEqual([503, 503, 200]);
    expect(hook.requests()).toBe(spans.length);
  });

  it('one caller cannot see, set or delete configs on another caller’s task', async () => {
    const hook = await receiver();
    const s = await serve(held, {
      push: { allow: [hook.host] },
      auth: createAuthenticator({
        apiKeys: [
          { name: 'a', key: 'key-of-alice-000' },
          { name: 'b', key: 'key-of-bob-00000' },
        ],
        anonymous: false,
      }),
    });
    const A = { ...V1, authorization: 'Bearer key-of-alice-000' };
    const B = { ...V1, authorization: 'Bearer key-of-bob-00000' };
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('job') }, A)).body.result.task;
    const cfg = (await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: hook.url }, A)).body.result;
    expect((await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: hook.url }, B)).body.error.code).toBe(-32001);
    expect((await rpc(s.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, B)).body.error.code).toBe(-32001);
    expect((await rpc(s.url, 'GetTaskPushNotificationConfig', { taskId: task.id, id: cfg.id }, B)).body.error.code).toBe(-32001);
    expect((await rpc(s.url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: cfg.id }, B)).body.error.code).toBe(-32001);
    expect((await rpc(s.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, A)).body.result.configs).toHaveLength(1);
  });

  it('with a store only this process writes, a task created without a config is never looked up; one set mid-task still gets its events', async () => {
    const hook = await receiver();
    const loads: string[] = [];
    const counted = (inner: PushNotificationStore): PushNotificationStore => ({
      save: (t, c, cfg) => inner.save(t, c, cfg),
      load: (t, c) => (loads.push(t), inner.load(t, c)),
      delete: (t, c, id) => inner.delete(t, c, id),
    });
    const s = await serve(held, { push: { allow: [hook.host], backoffMs: 5, store: counted(new InMemoryPushNotificationStore()), local: true } });
    const plain = (await rpc(s.url, 'SendMessage', { message: msg10('plain') }, V1)).body.result.task;
    await rpc(s.url, 'SendMessage', { message: msg10('go', { taskId: plain.id, contextId: plain.contextId }) }, V1);
    await s.pushIdle();
    expect(loads).toEqual([]);
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('job') }, V1)).body.result.task;
    await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: hook.url, token: 't' }, V1);
    await rpc(s.url, 'SendMessage', { message: msg10('go', { taskId: task.id, contextId: task.contextId }) }, V1);
    await hook.until(() => finalState(hook.got).includes('TASK_STATE_COMPLETED'));
    expect(finalState(hook.got)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(loads.filter((t) => t !== task.id)).toEqual([]);
  });

  it('with a store other replicas write, every pushed event of every task is looked up', async () => {
    const loads: string[] = [];
    const inner = new InMemoryPushNotificationStore();
    const store: PushNotificationStore = {
      save: (t, c, cfg) => inner.save(t, c, cfg),
      load: (t, c) => (loads.push(t), inner.load(t, c)),
      delete: (t, c, id) => inner.delete(t, c, id),
    };
    const s = await serve(async (ctx) => ({ state: 'completed', text: ctx.text }), { push: { allow: [], store } });
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('plain') }, V1)).body.result.task;
    await s.pushIdle();
    expect(loads.length).toBeGreaterThan(0);
    expect(new Set(loads)).toEqual(new Set([task.id]));
  });

  it('without push configured, the push methods answer PushNotificationNotSupported (-32003)', async () => {
    const s = await serve(held);
    const task = (await rpc(s.url, 'SendMessage', { message: msg10('job') }, V1)).body.result.task;
    expect((await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'http://x/' }, V1)).body.error.code).toBe(-32003);
  });
});
