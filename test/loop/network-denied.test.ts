/**
 * A tool's outgoing request that its network grant refuses is traced (`network_denied`) and shown
 * in the progress output; the tool gets the refusal and the session goes on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { printProgress } from '../../runtime/cli/progress.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { endTurn, openReplay, toolCall, type ReplayKit } from './replay-kit.ts';

let kit: ReplayKit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('network_denied', () => {
  it('a tool’s refused request is traced with the component, the destination and the task, and printed', async () => {
    kit = await openReplay({
      tools: [{ component: 'sandbox-probe', name: 'probe', runtime: 'tool' }],
      responses: [toolCall('probe', { op: 'fetch', url: 'http://127.0.0.1:9/secret' }), endTurn('done')],
    });
    const lines: string[] = [];
    printProgress(kit.session.trace, (l) => lines.push(l));
    const r = await kit.session.runTask({ taskId: 'net-1', contextId: 'c', text: 'try the network', source: 'task_md' });
    expect(r.exit).toBe('completed');
    const events = readTrace(kit.session.staged.workdir.trace).events;
    const denied = events.filter((e) => e.event_type === 'network_denied');
    expect(denied.map(({ component_kind, component, destination, task_id }) => ({ component_kind, component, destination, task_id }))).toEqual([
      { component_kind: 'tool', component: 'probe', destination: 'http://127.0.0.1:9', task_id: 'net-1' },
    ]);
    // Reported before the tool call that made it ends.
    const call = events.find((e) => e.event_type === 'tool_call')!;
    expect(Number(denied[0]!.seq)).toBeLessThan(Number(call.seq));
    expect(call.status).toBe('error'); // the probe reports the refusal as its own error result
    expect(lines).toContain('    ⛔ tool probe: outgoing request to http://127.0.0.1:9 refused (not in its network grant)');
  });
});
