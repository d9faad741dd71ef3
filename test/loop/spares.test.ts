/**
 * With a thread per instance (MURMUR_COMPONENT_THREADS=instance), sessions after the second take
 * their driver and tool instances from pre-instantiated spares (runtime/host/spares.ts); each must
 * still reach only its own provider and see only its own workdir and task. By default a session's
 * driver and tools share one thread of the session's and take no spares.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SPARES } from '../../runtime/host/spares.ts';
import { capsuleYaml, driverDef, ECHO_TOOL, openKit, type Kit } from './kit.ts';

const kits: Kit[] = [];
afterAll(async () => {
  await Promise.all(kits.map((k) => k.close()));
  await SPARES.drain();
});

describe('sessions served from pre-instantiated spares', () => {
  it('with a thread per instance, the third and fourth sessions of a capsule run on spares, each against its own provider and in its own workdir', async () => {
    for (let n = 1; n <= 4; n++) {
      if (n >= 3) {
        // The driver and the tool have each started twice: a spare of each is made in the background.
        await SPARES.whenIdle();
        expect(SPARES.readyKeys().length).toBe(2);
      }
      const kit = await openKit({
        yaml: capsuleYaml(),
        artifacts: [driverDef('anthropic'), ECHO_TOOL],
        script: { turns: [{ toolCalls: [{ name: 'echo', input: { text: `session ${n}` } }] }, { text: `answer ${n}` }] },
        env: { MURMUR_COMPONENT_THREADS: 'instance' },
      });
      kits.push(kit);
      const r = await kit.session.runTask({ taskId: `t${n}`, contextId: `ctx-${n}`, text: `task ${n}`, source: 'task_md' });
      expect(r.exit).toBe('completed');
      expect(r.text).toBe(`answer ${n}`);
      expect(readFileSync(join(kit.session.staged.workdir.dir, 'out', 'result.txt'), 'utf8')).toBe(`answer ${n}`);
      const driver = await kit.session.components.driver();
      const tool = await kit.session.components.tool(kit.session.staged.artifacts.find((a) => a.name === 'echo')!);
      expect([driver.fromSpare, tool.fromSpare]).toEqual(n >= 3 ? [true, true] : [false, false]);
    }
    // Every provider saw exactly its own session's two turns, carrying its own task.
    for (const [i, kit] of kits.entries()) {
      const turns = kit.provider.requests.filter((q) => q.turn !== undefined);
      expect(turns).toHaveLength(2);
      expect(JSON.stringify(turns[0]!.body)).toContain(`task ${i + 1}`);
      expect(JSON.stringify(turns[1]!.body)).toContain(`session ${i + 1}`);
    }
  });

  it("by default a session's driver and tool run in one thread of the session's, and take no spare", async () => {
    // (Spares the test above started making finish first.)
    await SPARES.whenIdle();
    await SPARES.drain();
    const threads: (number | undefined)[] = [];
    for (let n = 1; n <= 3; n++) {
      const kit = await openKit({
        yaml: capsuleYaml(),
        artifacts: [driverDef('anthropic'), ECHO_TOOL],
        script: { turns: [{ toolCalls: [{ name: 'echo', input: { text: `shared ${n}` } }] }, { text: `shared answer ${n}` }] },
      });
      kits.push(kit);
      const r = await kit.session.runTask({ taskId: `s${n}`, contextId: `sctx-${n}`, text: `task ${n}`, source: 'task_md' });
      expect(r.exit).toBe('completed');
      expect(r.text).toBe(`shared answer ${n}`);
      const driver = await kit.session.components.driver();
      const tool = await kit.session.components.tool(kit.session.staged.artifacts.find((a) => a.name === 'echo')!);
      expect(driver.threadId).toBeDefined();
      expect(tool.threadId).toBe(driver.threadId);
      expect([driver.fromSpare, tool.fromSpare]).toEqual([false, false]);
      threads.push(driver.threadId);
    }
    // A thread per session.
    expect(new Set(threads).size).toBe(3);
    await SPARES.whenIdle();
    expect(SPARES.readyKeys()).toEqual([]);
  });
});
