/**
 * A session's component thread let go while the session idles (MURMUR_COMPONENT_IDLE_MS,
 * runtime/host/thread.ts): the next task starts the driver and the tool afresh in a new worker and
 * completes as the first one did, against the same provider and in the same workdir.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { capsuleYaml, driverDef, ECHO_TOOL, openKit, type Kit } from './kit.ts';

const kits: Kit[] = [];
afterAll(async () => {
  await Promise.all(kits.map((k) => k.close()));
});

describe('a session whose component thread was let go for idling', () => {
  it('runs its next task with a fresh driver and tool in a new worker, with the same answer path', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: {
        turns: [
          { toolCalls: [{ name: 'echo', input: { text: 'first' } }] },
          { text: 'answer 1' },
          { toolCalls: [{ name: 'echo', input: { text: 'second' } }] },
          { text: 'answer 2' },
        ],
      },
      env: { MURMUR_COMPONENT_IDLE_MS: '1000' },
    });
    kits.push(kit);
    const thread = kit.session.components.thread!;
    const echo = kit.session.staged.artifacts.find((a) => a.name === 'echo')!;
    const r1 = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'task 1', source: 'task_md' });
    expect(r1.exit).toBe('completed');
    const stopped = thread.nextIdleStop();
    // (The thread may have idled once already, between the session's pre-warm and the first task
    // on a slow machine: the counts below are read relative to now.)
    const d1 = await kit.session.components.driver();
    const t1 = await kit.session.components.tool(echo);
    const before = { thread: d1.threadId, starts: thread.starts, idleStops: thread.idleStops, driver: d1.starts, tool: t1.starts };
    await stopped;
    expect(thread.running).toBe(false);
    expect(thread.idleStops).toBe(before.idleStops + 1);

    const r2 = await kit.session.runTask({ taskId: 't2', contextId: 'c2', text: 'task 2', source: 'task_md' });
    expect(r2.exit).toBe('completed');
    expect(r2.text).toBe('answer 2');
    expect(readFileSync(join(kit.session.staged.workdir.dir, 'out', 'result.txt'), 'utf8')).toBe('answer 2');
    const driver = await kit.session.components.driver();
    const tool = await kit.session.components.tool(echo);
    expect(driver.threadId).toBeDefined();
    expect(driver.threadId).not.toBe(before.thread);
    expect(tool.threadId).toBe(driver.threadId);
    expect([driver.starts, tool.starts]).toEqual([before.driver + 1, before.tool + 1]);
    expect(thread.starts).toBe(before.starts + 1);
    // The tool's second call carried the second task's input to the same provider.
    const turns = kit.provider.requests.filter((q) => q.turn !== undefined);
    expect(turns).toHaveLength(4);
    expect(JSON.stringify(turns[3]!.body)).toContain('second');
  });
});
