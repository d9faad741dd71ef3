/**
 * lifecycle.input_timeout_secs with a real tool component: the tool's request-input gets no reply,
 * the component is aborted, and the task fails — on the A2A side and in the session's own record
 * (task_end, on-task-end), not canceled.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Role, type Message } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext } from '@a2a-js/sdk/server';
import { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import { textPart } from '../../runtime/a2a/core/wire.ts';
import { DEFAULT_INPUT_TIMEOUT_SECS, parseManifest } from '../../runtime/manifest/index.ts';
import { taskExecutor } from '../../runtime/compose/a2a-bridge.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { capsuleYaml, driverDef, openKit, PROBE_TOOL, type Kit } from '../loop/kit.ts';
import { closeAll, msg03, rpc, serve, until } from './helpers.ts';

let kit: Kit | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await closeAll();
  await kit?.close();
  kit = undefined;
});

describe('request-input timeout', () => {
  it('no reply in time: the tool is aborted and the task fails everywhere, with the timeout as the reason', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'asker', tools: ['probe'] }),
      artifacts: [driverDef('anthropic'), PROBE_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'which branch?' } }] }, { text: 'never reached' }] },
    });
    const server = await serve(taskExecutor(kit.session), { inputTimeoutSecs: 1 });
    const sent = await rpc(server.url, 'message/send', { message: msg03('deploy it'), configuration: { blocking: true } });
    const taskId = sent.body.result.id as string;
    const done = await until(server, async () => {
      const t = await rpc(server.url, 'tasks/get', { id: taskId });
      return ['failed', 'completed', 'canceled'].includes(t.body.result.status.state) ? t.body.result : undefined;
    });
    expect(done.status.state).toBe('failed');
    const k = kit;
    // The executor has returned once the server is idle; the session wrote task_end before that.
    await server.idle();
    const end = readTrace(k.session.staged.workdir.trace).events.find((e) => e.event_type === 'task_end');
    expect(end).toMatchObject({ exit_status: 'failed' });
    expect(String(end!.reason)).toMatch(/input timeout: task .* got no reply within 1s/);
    // The model was never asked again: the task stopped at the tool.
    expect(kit.provider.requests.filter((q) => q.turn !== undefined)).toHaveLength(1);
  });
});

describe('request-input timeout default', () => {
  it('a capsule without lifecycle.input_timeout_secs gets the documented default, the value the operator renders', async () => {
    const m = parseManifest('name: demo\nversion: 1.0.0\n');
    expect(DEFAULT_INPUT_TIMEOUT_SECS).toBe(3600);
    expect(m.lifecycle.inputTimeoutSecs).toBe(DEFAULT_INPUT_TIMEOUT_SECS);
    const { DEFAULT_INPUT_TIMEOUT_SECS: rendered } = await import('../../operator/translate/builders/manifest.ts');
    expect(rendered).toBe(DEFAULT_INPUT_TIMEOUT_SECS);
  });

  it('a task machine given no timeout fails an unanswered input request after the default, and the queued task runs', async () => {
    // The clock is the test's: an hour passes without waiting one. Only setTimeout is faked.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: 'alice' } });
    const message = (text: string): Message => ({
      messageId: crypto.randomUUID(),
      role: Role.ROLE_USER,
      parts: [textPart(text)],
      contextId: '',
      taskId: '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    const m = new TaskMachine({
      executor: async (ctx, ev) =>
        ctx.text === 'ask' ? { state: 'completed', text: await ev.requestInput('which branch?') } : { state: 'completed', text: 'second ran' },
      acceptance: 'queue',
      queueDepth: 19,
      maxLiveTasks: 100,
      store: new InMemoryTaskStore(),
      stream: { maxQueued: 16, maxBuffered: 1 << 20, heartbeatMs: 0 },
    });
    const start = (text: string) => {
      const rec = m.create({ message: message(text), origin: 'user', trust: 'untrusted', traceparent: undefined, caller });
      m.admit(rec);
      return rec;
    };
    const asker = start('ask');
    const queued = start('next');
    await m.waitFor(asker, () => asker.state === 'input-required');
    expect(queued.state).toBe('submitted');
    await vi.advanceTimersByTimeAsync((DEFAULT_INPUT_TIMEOUT_SECS - 1) * 1000);
    expect(asker.state).toBe('input-required');
    await vi.advanceTimersByTimeAsync(1000);
    expect(asker.state).toBe('failed');
    expect(asker.statusMessage?.parts[0]?.content).toMatchObject({ value: expect.stringMatching(/got no reply within 3600s/) });
    await m.waitFor(queued, () => queued.final);
    expect(queued.state).toBe('completed');
  });
});
