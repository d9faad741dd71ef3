/** Acceptance (none/single/queue), request-input, cancel at each phase. */
import { afterAll, describe, expect, it } from 'vitest';
import { closeAll, msg03, msg10, rpc, serve, sse, until, V1 } from './helpers.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';

afterAll(closeAll);

const instant: TaskExecutor = async (ctx) => ({ state: 'completed', text: ctx.text });

/** An executor that waits until released (or its signal fires); `whenStarted(n)` resolves once n runs began. */
function gated() {
  const releases: Array<() => void> = [];
  const started: string[] = [];
  const startWaiters: Array<{ n: number; resolve: () => void }> = [];
  const exec: TaskExecutor = (ctx) =>
    new Promise((resolve) => {
      started.push(ctx.taskId);
      const done = () => resolve({ state: 'completed', text: `done ${ctx.text}` });
      releases.push(done);
      ctx.signal.addEventListener('abort', () => resolve({ state: 'completed', text: 'ignored after cancel' }));
      for (const w of startWaiters.filter((w) => started.length >= w.n)) {
        startWaiters.splice(startWaiters.indexOf(w), 1);
        w.resolve();
      }
    });
  const whenStarted = (n: number) => (started.length >= n ? Promise.resolve() : new Promise<void>((resolve) => startWaiters.push({ n, resolve })));
  return { exec, releases, started, whenStarted };
}

const nonBlocking = (text: string) => ({ message: msg03(text), configuration: { blocking: false } });

describe('task acceptance', () => {
  it('none: no task is served', async () => {
    const s = await serve(instant, { acceptance: 'none' });
    const { body } = await rpc(s.url, 'message/send', { message: msg03('x') });
    expect(body.error.code).toBe(-32004);
    expect(body.error.message).toContain('task_acceptance: none');
    expect((await fetch(new URL('readyz', s.url))).status).toBe(503);
  });

  it('single: one task, then done resolves; a second task is rejected', async () => {
    const g = gated();
    const s = await serve(g.exec, { acceptance: 'single' });
    let doneFired = false;
    void s.done.then(() => (doneFired = true));
    const first = await rpc(s.url, 'message/send', nonBlocking('one'));
    expect(['submitted', 'working']).toContain(first.body.result.status.state);
    const second = await rpc(s.url, 'message/send', { message: msg03('two') });
    expect(second.body.result.status.state).toBe('rejected');
    expect(second.body.result.id).not.toBe(first.body.result.id);
    expect(doneFired).toBe(false);
    await g.whenStarted(1);
    g.releases[0]!();
    await s.done;
    const got = await rpc(s.url, 'tasks/get', { id: first.body.result.id });
    expect(got.body.result.status.state).toBe('completed');
  });

  it('queue: runs tasks one at a time; over queueDepth the task is rejected', async () => {
    const g = gated();
    const s = await serve(g.exec, { acceptance: 'queue', queueDepth: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await rpc(s.url, 'message/send', nonBlocking(`t${i}`))).body.result.id);
    const over = await rpc(s.url, 'message/send', nonBlocking('overflow'));
    expect(over.body.result.status.state).toBe('rejected');
    expect(over.body.result.status.message.parts[0].text).toMatch(/queue full/);
    expect(s.stats()).toMatchObject({ running: 1, pending: 2 });
    expect((await rpc(s.url, 'tasks/get', { id: ids[1] })).body.result.status.state).toBe('submitted');
    for (let i = 0; i < 3; i++) {
      await g.whenStarted(i + 1);
      expect(g.started).toHaveLength(i + 1);
      g.releases[i]!();
    }
    await s.idle();
    for (const id of ids) expect((await rpc(s.url, 'tasks/get', { id })).body.result.status.state).toBe('completed');
    // Capacity is free again.
    expect((await rpc(s.url, 'message/send', nonBlocking('again'))).body.result.status.state).not.toBe('rejected');
  });

  it('a blocking send waits for the terminal state', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let begun!: () => void;
    const started = new Promise<void>((r) => (begun = r));
    const s = await serve(async (ctx) => {
      begun();
      await gate;
      return { state: 'completed', text: ctx.text.toUpperCase() };
    });
    let answered = false;
    const send = rpc(s.url, 'SendMessage', { message: msg10('abc') }, V1).then((r) => ((answered = true), r));
    await started;
    // The task is running and not finished: the blocking send has not answered yet.
    expect(answered).toBe(false);
    release();
    const { body } = await send;
    expect(body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(body.result.task.artifacts[0].parts[0].text).toBe('ABC');
  });
});

describe('request-input', () => {
  const asker: TaskExecutor = async (ctx, ev) => {
    const answer = await ev.requestInput(`which colour for ${ctx.text}?`);
    return { state: 'completed', text: `${ctx.text} in ${answer}` };
  };

  it('round trip: input-required with the prompt, the next message/send delivers the reply', async () => {
    const s = await serve(asker);
    const first = await rpc(s.url, 'message/send', { message: msg03('car') });
    expect(first.body.result.status.state).toBe('input-required');
    expect(first.body.result.status.message.parts[0].text).toBe('which colour for car?');
    const { id, contextId } = first.body.result;
    const reply = await rpc(s.url, 'message/send', { message: msg03('red', { taskId: id, contextId }) });
    expect(reply.body.result.id).toBe(id);
    expect(reply.body.result.status.state).toBe('completed');
    expect(reply.body.result.artifacts[0].parts[0].text).toBe('car in red');
    expect(reply.body.result.history.map((m: any) => m.parts[0].text)).toEqual(['car', 'red']);
  });

  it('round trip over streams (1.0): the stream ends at input-required, the reply streams to the end', async () => {
    const s = await serve(asker);
    const a = await sse(s.url, 'SendStreamingMessage', { message: msg10('bike') }, V1);
    const last = a.at(-1).result.statusUpdate;
    expect(last.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const b = await sse(s.url, 'SendStreamingMessage', { message: msg10('blue', { taskId: last.taskId }) }, V1);
    expect(b[0].result.task.id).toBe(last.taskId);
    expect(b.at(-1).result.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect(b.filter((e) => e.result.statusUpdate?.status.state === 'TASK_STATE_COMPLETED')).toHaveLength(1);
  });

  it('a reply with a mismatched contextId is refused', async () => {
    const s = await serve(asker);
    const first = await rpc(s.url, 'message/send', { message: msg03('x') });
    const bad = await rpc(s.url, 'message/send', { message: msg03('y', { taskId: first.body.result.id, contextId: 'other' }) });
    expect(bad.body.error.code).toBe(-32602);
  });

  it('timeout: requestInput rejects, the task fails', async () => {
    let seen: unknown;
    const s = await serve(
      async (_ctx, ev) => {
        try {
          await ev.requestInput('anyone?');
        } catch (e) {
          seen = e;
          throw e;
        }
        return { state: 'completed' };
      },
      { inputTimeoutSecs: 0.2 },
    );
    const first = await rpc(s.url, 'message/send', { message: msg03('x') });
    expect(first.body.result.status.state).toBe('input-required');
    const id = first.body.result.id;
    const failed = await until(s, async () => {
      const r = await rpc(s.url, 'tasks/get', { id });
      return r.body.result.status.state === 'failed' ? r.body.result : undefined;
    });
    expect(failed.status.message.parts[0].text).toMatch(/input timeout/);
    expect((seen as Error).name).toBe('InputTimeoutError');
    const late = await rpc(s.url, 'message/send', { message: msg03('too late', { taskId: id }) });
    expect(late.body.error.code).toBe(-32004);
  });
});

describe('cancel', () => {
  it('while working: aborts ctx.signal, ends canceled with one final status', async () => {
    let aborted: unknown;
    const s = await serve(
      (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = ctx.signal.reason;
            resolve({ state: 'completed', text: 'should be ignored' });
          });
        }),
    );
    const streamP = sse(s.url, 'message/stream', { message: msg03('long') });
    const id = await until(s, async () => {
      const r = await rpc(s.url, 'ListTasks', {}, V1);
      return r.body.result.tasks[0]?.status.state === 'TASK_STATE_WORKING' ? r.body.result.tasks[0].id : undefined;
    });
    const c = await rpc(s.url, 'tasks/cancel', { id });
    expect(c.body.result.status.state).toBe('canceled');
    const events = await streamP;
    const finals = events.filter((e) => e.result.final);
    expect(finals).toHaveLength(1);
    expect(finals[0].result.status.state).toBe('canceled');
    expect((aborted as Error).name).toBe('TaskCanceledError');
    await s.idle();
    expect((await rpc(s.url, 'tasks/get', { id })).body.result.status.state).toBe('canceled');
  });

  it('while waiting for input: requestInput rejects, ends canceled', async () => {
    let rejection: unknown;
    const s = await serve(async (_ctx, ev) => {
      try {
        await ev.requestInput('?');
      } catch (e) {
        rejection = e;
      }
      return { state: 'completed' };
    });
    const first = await rpc(s.url, 'message/send', { message: msg03('x') });
    expect(first.body.result.status.state).toBe('input-required');
    const c = await rpc(s.url, 'CancelTask', { id: first.body.result.id }, V1);
    expect(c.body.result.status.state).toBe('TASK_STATE_CANCELED');
    await s.idle();
    expect((rejection as Error).name).toBe('TaskCanceledError');
    expect((await rpc(s.url, 'tasks/get', { id: first.body.result.id })).body.result.status.state).toBe('canceled');
  });

  it('while queued: the task never starts', async () => {
    const g = gated();
    const s = await serve(g.exec, { queueDepth: 4 });
    await rpc(s.url, 'message/send', nonBlocking('first'));
    const queued = await rpc(s.url, 'message/send', nonBlocking('second'));
    const c = await rpc(s.url, 'tasks/cancel', { id: queued.body.result.id });
    expect(c.body.result.status.state).toBe('canceled');
    await g.whenStarted(1);
    g.releases[0]!();
    await s.idle();
    expect(g.started).toHaveLength(1);
  });

  it('a terminal task is not cancelable (-32002); an unknown one is not found (-32001)', async () => {
    const s = await serve(instant);
    const done = await rpc(s.url, 'message/send', { message: msg03('x') });
    const c = await rpc(s.url, 'tasks/cancel', { id: done.body.result.id });
    expect(c.body.error.code).toBe(-32002);
    expect((await rpc(s.url, 'tasks/cancel', { id: 'nope' })).body.error.code).toBe(-32001);
  });
});

describe('streams and re-attach', () => {
  it('a streamed task over capacity: the task first, then one final rejected status', async () => {
    const g = gated();
    const s = await serve(g.exec, { acceptance: 'single' });
    await rpc(s.url, 'message/send', nonBlocking('takes the slot'));
    const events = await sse(s.url, 'message/stream', { message: msg03('too many') });
    expect(events.map((e) => e.result.kind)).toEqual(['task', 'status-update']);
    expect(events[1].result).toMatchObject({ final: true, status: { state: 'rejected' } });
    await g.whenStarted(1);
    g.releases[0]!();
    await s.done;
  });

  it('SubscribeToTask / tasks/resubscribe re-attach to a running task; a final task cannot be re-attached', async () => {
    const g = gated();
    const s = await serve(g.exec);
    const first = await rpc(s.url, 'message/send', nonBlocking('long'));
    const id = first.body.result.id;
    await g.whenStarted(1);
    const v1 = sse(s.url, 'SubscribeToTask', { id }, V1);
    const v03 = sse(s.url, 'tasks/resubscribe', { id });
    await until(s, () => s.stats().subscribers === 2);
    g.releases[0]!();
    const [a, b] = await Promise.all([v1, v03]);
    expect(a[0].result.task.id).toBe(id);
    expect(a.at(-1).result.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect(b[0].result.kind).toBe('task');
    expect(b.filter((e) => e.result.final)).toHaveLength(1);
    const again = await sse(s.url, 'SubscribeToTask', { id }, V1);
    expect(again[0].error.code).toBe(-32004);
  });

  it('A2A-Version is normalised (1, 1.0.1 → 1.0)', async () => {
    const s = await serve(instant);
    for (const v of ['1', '1.0.1', ' 1.0 ']) {
      const r = await rpc(s.url, 'SendMessage', { message: msg10('v') }, { 'A2A-Version': v });
      expect(r.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    }
    const r = await rpc(s.url, 'message/send', { message: msg03('v') }, { 'A2A-Version': '0.3.0' });
    expect(r.body.result.status.state).toBe('completed');
  });
});
