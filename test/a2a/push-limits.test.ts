/**
 * Push-notification configs are bounded (issue 38 §4) and 0.3's default config id is the task id
 * (§5), over real HTTP with a real webhook receiver: configs per task (also under a burst of
 * concurrent sets), configs per caller over its unfinished tasks, the webhook URL's length.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { closeAll, msg03, msg10, rpc, serve, until, V1 } from './helpers.ts';

const receivers: http.Server[] = [];
afterAll(async () => {
  await closeAll();
  for (const r of receivers) r.close();
});

/** A webhook that answers 200 to everything, counting the POSTs. */
async function receiver() {
  let posts = 0;
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      posts++;
      res.end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  receivers.push(srv);
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
  return { url, host: new URL(url).host, posts: () => posts };
}

/** Tasks that run until the test releases them all. */
function gate() {
  let release!: () => void;
  const open = new Promise<void>((r) => (release = r));
  const exec: TaskExecutor = async (ctx) => {
    await open;
    return { state: 'completed', text: ctx.text };
  };
  return { exec, release };
}

async function runningTask(url: string): Promise<{ id: string; contextId: string }> {
  const r = await rpc(url, 'SendMessage', { message: msg10('job'), configuration: { returnImmediately: true } }, V1);
  return r.body.result.task;
}

describe('push config bounds', () => {
  it('a task holds at most maxConfigsPerTask configs, also under a burst of concurrent sets; a set under an existing id replaces', async () => {
    const hook = await receiver();
    const g = gate();
    const s = await serve(g.exec, { push: { allow: [hook.host], limits: { maxConfigsPerTask: 3 } } });
    const task = await runningTask(s.url);
    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) => rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: `c${i}`, url: hook.url }, V1)),
    );
    const refused = burst.filter((r) => r.body.error);
    expect(burst.length - refused.length).toBe(3);
    expect(refused[0]!.body.error.code).toBe(-32602);
    expect(refused[0]!.body.error.message).toContain(`task ${task.id} already has 3 push notification configs; at most 3 per task`);
    expect(refused[0]!.body.error.message).toContain('[E-A2A-046]');
    const held = (await rpc(s.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, V1)).body.result.configs;
    expect(held).toHaveLength(3);
    // Set again under an id it has: replaced, not refused.
    const again = await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: held[0].id, url: `${hook.url}?v=2` }, V1);
    expect(again.body.result.url).toBe(`${hook.url}?v=2`);
    await rpc(s.url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: held[1].id }, V1);
    expect((await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'after-delete', url: hook.url }, V1)).body.result.id).toBe(
      'after-delete',
    );
    g.release();
    await until(s, () => s.stats().running === 0);
    await s.pushIdle();
    // Each pushed event went to the 3 configs, no more.
    expect(hook.posts() % 3).toBe(0);
  });

  it('a caller holds at most maxConfigsPerCaller configs over its unfinished tasks; an ended task stops counting', async () => {
    const hook = await receiver();
    const g = gate();
    const s = await serve(g.exec, { push: { allow: [hook.host], limits: { maxConfigsPerTask: 3, maxConfigsPerCaller: 4 } } });
    const a = await runningTask(s.url);
    const b = await runningTask(s.url);
    for (let i = 0; i < 3; i++) expect((await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: a.id, url: hook.url }, V1)).body.result).toBeDefined();
    expect((await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: b.id, url: hook.url }, V1)).body.result).toBeDefined();
    const over = await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: b.id, url: hook.url }, V1);
    expect(over.body.error.code).toBe(-32602);
    expect(over.body.error.message).toContain('already holds 4 push notification configs on its unfinished tasks; at most 4');
    expect(over.body.error.message).toContain('[E-A2A-047]');
    // A new task sent with a config counts too.
    const viaSend = await rpc(
      s.url,
      'SendMessage',
      { message: msg10('x'), configuration: { returnImmediately: true, taskPushNotificationConfig: { url: hook.url } } },
      V1,
    );
    expect(viaSend.body.error.message).toContain('[E-A2A-047]');
    // The tasks end: their configs push nothing more and no longer count.
    g.release();
    await until(s, () => s.stats().running === 0 && s.stats().pending === 0);
    const c = await runningTask(s.url);
    expect((await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: c.id, url: hook.url }, V1)).body.result).toBeDefined();
  });

  it('a webhook URL longer than maxUrlLength is refused, at set and in a send', async () => {
    const hook = await receiver();
    const g = gate();
    const s = await serve(g.exec, { push: { allow: [hook.host] } });
    const task = await runningTask(s.url);
    const long = `${hook.url}?q=${'a'.repeat(900 * 1024)}`;
    const set = await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: long }, V1);
    expect(set.body.error.code).toBe(-32602);
    expect(set.body.error.message).toContain(`push notification url is ${long.length} characters long; at most 2048 are accepted [E-A2A-048]`);
    const viaSend = await rpc(s.url, 'SendMessage', { message: msg10('x'), configuration: { taskPushNotificationConfig: { url: long } } }, V1);
    expect(viaSend.body.error.message).toContain('[E-A2A-048]');
    expect((await rpc(s.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, V1)).body.result.configs ?? []).toEqual([]);
    g.release();
  });
});

describe('A2A 0.3 push config ids', () => {
  it('a config set without an id has the task id; get and delete with only the task id find it', async () => {
    const hook = await receiver();
    const g = gate();
    const s = await serve(g.exec, { push: { allow: [hook.host] } });
    const task = (await rpc(s.url, 'message/send', { message: msg03('job'), configuration: { blocking: false } })).body.result;
    const set = await rpc(s.url, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: hook.url, token: 't' } });
    expect(set.body.result).toMatchObject({ taskId: task.id, pushNotificationConfig: { id: task.id, url: hook.url } });
    const got = await rpc(s.url, 'tasks/pushNotificationConfig/get', { id: task.id });
    expect(got.body.result?.pushNotificationConfig).toMatchObject({ id: task.id, url: hook.url });
    expect((await rpc(s.url, 'tasks/pushNotificationConfig/delete', { id: task.id })).body.error).toBeUndefined();
    expect((await rpc(s.url, 'tasks/pushNotificationConfig/list', { id: task.id })).body.result).toEqual([]);
    // 1.0 leaves the id to the server: a fresh one, not the task id.
    const v1 = await rpc(s.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: hook.url }, V1);
    expect(v1.body.result.id).toMatch(/.+/);
    expect(v1.body.result.id).not.toBe(task.id);
    g.release();
  });
});
