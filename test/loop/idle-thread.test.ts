/**
 * A session's component thread going idle (MURMUR_COMPONENT_IDLE_MS, runtime/host/thread.ts): it
 * keeps the small driver (C, 128 KiB of linear memory) in its worker and lets the JavaScript echo
 * tool (≈ 9 MiB) go, or with MURMUR_COMPONENT_IDLE_KEEP_MIB=0 lets everything go; either way the
 * next task completes as the first one did, against the same provider and in the same workdir.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { capsuleYaml, driverDef, ECHO_TOOL, openKit, TWO_TASKS, type Kit } from './kit.ts';

const kits: Kit[] = [];
afterAll(async () => {
  await Promise.all(kits.map((k) => k.close()));
});

describe('a session whose component thread went idle', () => {
  it('keeps the small driver in the same worker and starts the JS-engine tool afresh beside it for the next task', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: TWO_TASKS,
      env: { MURMUR_COMPONENT_IDLE_MS: '1000' },
    });
    kits.push(kit);
    const thread = kit.session.components.thread!;
    const echo = kit.session.staged.artifacts.find((a) => a.name === 'echo')!;
    // Waited for from before the task: its calls come far closer together than the idle time.
    const idle = thread.nextIdle();
    const r1 = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'task 1', source: 'task_md' });
    expect(r1.exit).toBe('completed');
    const d1 = await kit.session.components.driver();
    const t1 = await kit.session.components.tool(echo);
    const before = { thread: d1.threadId, starts: thread.starts, driver: d1.starts, tool: t1.starts, stops: thread.idleStops };
    expect(await idle).toMatchObject({ stopped: false, dropped: 1 });
    expect(thread.running).toBe(true);
    expect(thread.idleStops).toBe(before.stops);

    const r2 = await kit.session.runTask({ taskId: 't2', contextId: 'c2', text: 'task 2', source: 'task_md' });
    expect(r2.exit).toBe('completed');
    expect(r2.text).toBe('answer 2');
    const driver = await kit.session.components.driver();
    const tool = await kit.session.components.tool(echo);
    // The same driver instance in the same worker; the tool instantiated again in that worker.
    expect([driver.threadId, driver.starts]).toEqual([before.thread, before.driver]);
    expect([tool.threadId, tool.starts]).toEqual([before.thread, before.tool + 1]);
    expect(thread.starts).toBe(before.starts);
    const turns = kit.provider.requests.filter((q) => q.turn !== undefined);
    expect(turns).toHaveLength(4);
    expect(JSON.stringify(turns[3]!.body)).toContain('second');
  });
});

describe('a session whose component thread was let go for idling (MURMUR_COMPONENT_IDLE_KEEP_MIB=0)', () => {
  it('runs its next task with a fresh driver and tool in a new worker, with the same answer path', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: TWO_TASKS,
      env: { MURMUR_COMPONENT_IDLE_MS: '1000', MURMUR_COMPONENT_IDLE_KEEP_MIB: '0' },
    });
    kits.push(kit);
    const thread = kit.session.components.thread!;
    const echo = kit.session.staged.artifacts.find((a) => a.name === 'echo')!;
    const r1 = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'task 1', source: 'task_md' });
    expect(r1.exit).toBe('completed');
    const stopped = thread.nextIdle();
    // (The thread may have idled once already, between the session's pre-warm and the first task
    // on a slow machine: the counts below are read relative to now.)
    const d1 = await kit.session.components.driver();
    const t1 = await kit.session.components.tool(echo);
    const before = { thread: d1.threadId, starts: thread.starts, idleStops: thread.idleStops, driver: d1.starts, tool: t1.starts };
    expect(await stopped).toEqual({ stopped: true });
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
