/**
 * lifecycle.input_timeout_secs with a real tool component: the tool's request-input gets no reply,
 * the component is aborted, and the task fails — on the A2A side and in the session's own record
 * (task_end, on-task-end), not canceled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { taskExecutor } from '../../runtime/compose/a2a-bridge.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { capsuleYaml, driverDef, openKit, PROBE_TOOL, type Kit } from '../loop/kit.ts';
import { closeAll, msg03, rpc, serve, until } from './helpers.ts';

let kit: Kit | undefined;
afterEach(async () => {
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
