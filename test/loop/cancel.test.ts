/** Cancellation stops a task at the next safe point: between turns, during a tool call, during inference. */
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import { SILENT_SINK } from '../../runtime/loop/capsule-session.ts';
import { ECHO_TOOL } from './kit.ts';
import { endTurn, openReplay, toolCall, type ReplayKit } from './replay-kit.ts';

let kit: ReplayKit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const PROBE = { component: 'sandbox-probe', name: 'probe', runtime: 'tool' as const, extra: 'input_schema: {type: object}\n' };

describe('cancel', () => {
  it('between turns: the loop stops before the next inference', async () => {
    kit = await openReplay({ tools: [ECHO_TOOL], responses: [toolCall('echo', { text: 'a' }), endTurn('never reached')] });
    const ac = new AbortController();
    const r = await kit.session.runTask(
      { taskId: 't', contextId: 'c', text: 'x', source: 'a2a' },
      { ...SILENT_SINK, artifact: (a) => a.name === 'tool-call' && ac.abort() },
      ac.signal,
    );
    expect(r.exit).toBe('canceled');
    expect(r.reason).toMatch(/between turns/);
    expect(kit.recorder.bodies).toHaveLength(1);
    expect(readTrace(kit.session.staged.workdir.trace).events.find((e) => e.event_type === 'task_end')).toMatchObject({ exit_status: 'canceled' });
  });

  it('during a tool call: the running component is stopped and the task ends canceled', async () => {
    // The probe announces itself with one chunk, then spins forever: cancel when it says it is running.
    kit = await openReplay({ tools: [PROBE], responses: [toolCall('probe', { op: 'spin', announce: true }), endTurn('never')] });
    const ac = new AbortController();
    const chunks: string[] = [];
    const sink = { ...SILENT_SINK, textChunk: (s: string) => (chunks.push(s), s === 'spinning' && ac.abort()) };
    // The tool never returns on its own (and its deadline is 600 s): only the cancel ends this call.
    const r = await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'a2a' }, sink, ac.signal);
    expect(chunks).toContain('spinning');
    expect(r.exit).toBe('canceled');
    expect(r.reason).toMatch(/during tool probe/);
  });

  it('during inference: the driver call is stopped and nothing more is sent', async () => {
    kit = await openReplay({ responses: [endTurn('x')] });
    const ac = new AbortController();
    const r = await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'a2a' }, { ...SILENT_SINK, status: () => ac.abort() }, ac.signal);
    expect(r.exit).toBe('canceled');
    expect(r.reason).toMatch(/during inference/);
  });
});
