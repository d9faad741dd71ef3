/** request-input is an A2A feature: outside an A2A task the tool gets an error at once. */
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import { endTurn, openReplay, toolCall, type ReplayKit } from './replay-kit.ts';

let kit: ReplayKit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('request-input outside an A2A task', () => {
  it('returns an error to the tool at once (nobody could answer), and the session goes on', async () => {
    kit = await openReplay({
      tools: [{ component: 'sandbox-probe', name: 'probe', runtime: 'tool' }],
      responses: [toolCall('probe', { op: 'ask', prompt: 'which branch?' }), endTurn('done')],
    });
    const r = await kit.session.runTask({ taskId: 'local', contextId: 'c', text: 'ask something', source: 'task_md' });
    expect(r.exit).toBe('completed');
    const call = readTrace(kit.session.staged.workdir.trace).events.find((e) => e.event_type === 'tool_call')!;
    // The probe reports what the host answered: the request-input error, not a hang.
    expect(call.status).toBe('error');
    const toolMsg = (kit.recorder.bodies[1] as { messages: { role: string; content: { text: string }[] }[] }).messages.find((m) => m.role === 'tool')!;
    expect(toolMsg.content[0]!.text).toContain('request-input is only available while the capsule runs an A2A task');
  });
});
