/**
 * A session's process settling once its component thread goes quiet (MURMUR_SETTLE_MS,
 * runtime/host/thread.ts and runtime/memory.ts): a moment after the last call the worker collects
 * its garbage and the process gives the freed memory back, keeping the thread, its worker and
 * every instance (nothing is let go), so the next task runs in the same instances; and where the
 * idle release comes first (MURMUR_COMPONENT_IDLE_MS not above MURMUR_SETTLE_MS) it is left to it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { capsuleYaml, driverDef, ECHO_TOOL, openKit, TWO_TASKS, type Kit } from './kit.ts';

const kits: Kit[] = [];
afterAll(async () => {
  await Promise.all(kits.map((k) => k.close()));
});

describe('a session gone quiet after a task', () => {
  it('settles within MURMUR_SETTLE_MS: garbage collected in both isolates and freed memory returned, the thread and every instance kept for the next task', async () => {
    const kit = await openKit({ yaml: capsuleYaml(), artifacts: [driverDef('anthropic'), ECHO_TOOL], script: TWO_TASKS, env: { MURMUR_SETTLE_MS: '200' } });
    kits.push(kit);
    const thread = kit.session.components.thread!;
    const echo = kit.session.staged.artifacts.find((a) => a.name === 'echo')!;
    const r1 = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'task 1', source: 'task_md' });
    expect(r1.exit).toBe('completed');
    // Registered once the task is done: the calls within it came far closer together than 200 ms.
    const settled = thread.nextSettle();
    const d1 = await kit.session.components.driver();
    const t1 = await kit.session.components.tool(echo);
    const before = { thread: d1.threadId, starts: thread.starts, driver: d1.starts, tool: t1.starts };

    const s = await settled;
    expect(s.heapUsed).toBeGreaterThan(0);
    expect(s.released).toMatchObject({ kind: 'settle', after: ['component thread'], addon: true, returned: expect.any(Boolean) });
    expect(thread.running).toBe(true);
    expect([thread.idleStops, thread.idleCollects]).toEqual([0, 0]);

    const r2 = await kit.session.runTask({ taskId: 't2', contextId: 'c2', text: 'task 2', source: 'task_md' });
    expect(r2.exit).toBe('completed');
    expect(r2.text).toBe('answer 2');
    const driver = await kit.session.components.driver();
    const tool = await kit.session.components.tool(echo);
    // The same instances in the same worker: nothing started again.
    expect([driver.threadId, driver.starts, tool.threadId, tool.starts]).toEqual([before.thread, before.driver, before.thread, before.tool]);
    expect(thread.starts).toBe(before.starts);
    const turns = kit.provider.requests.filter((q) => q.turn !== undefined);
    expect(turns).toHaveLength(4);
    expect(JSON.stringify(turns[3]!.body)).toContain('second');
  });

  it('doubles its settle delay when a task follows a settle within SETTLE_BACKOFF delays, and settles again after the longer quiet', async () => {
    const turns = [1, 2, 3].flatMap((i) => [{ toolCalls: [{ name: 'echo', input: { text: `t${i}` } }] }, { text: `answer ${i}` }]);
    const kit = await openKit({ yaml: capsuleYaml(), artifacts: [driverDef('anthropic'), ECHO_TOOL], script: { turns }, env: { MURMUR_SETTLE_MS: '200' } });
    kits.push(kit);
    const thread = kit.session.components.thread!;
    const task = async (i: number): Promise<void> => {
      const r = await kit.session.runTask({ taskId: `t${i}`, contextId: `c${i}`, text: `task ${i}`, source: 'task_md' });
      expect(r.exit).toBe('completed');
    };
    await task(1);
    await thread.nextSettle();
    // 200 ms, or more had the session's pre-warm settled just before the first task.
    const d = thread.settleDelayMs;
    expect(d).toBeGreaterThanOrEqual(200);
    // At once after the settle: far within 4 delays of it.
    await task(2);
    expect(thread.settleDelayMs).toBe(2 * d);
    const again = await thread.nextSettle();
    expect(again.released).toMatchObject({ kind: 'settle' });
    await task(3);
    expect(thread.settleDelayMs).toBe(4 * d);
    expect(thread.starts).toBe(1);
  });

  it('leaves the quiet period to the idle release when that comes first (MURMUR_COMPONENT_IDLE_MS ≤ MURMUR_SETTLE_MS)', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: TWO_TASKS,
      env: { MURMUR_SETTLE_MS: '1000', MURMUR_COMPONENT_IDLE_MS: '1000' },
    });
    kits.push(kit);
    const thread = kit.session.components.thread!;
    const r1 = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'task 1', source: 'task_md' });
    expect(r1.exit).toBe('completed');
    expect(await thread.nextIdle()).toMatchObject({ stopped: false });
    expect(thread.settles).toBe(0);
  });
});
