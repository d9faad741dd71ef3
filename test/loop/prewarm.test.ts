/**
 * Pre-warming a session's components (what `mur serve` does once the session is open): the driver
 * and the tool instantiate before the first task, and a task arriving while they are still
 * instantiating uses those same workers rather than starting second ones.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { capsuleYaml, driverDef, ECHO_TOOL, openKit, type Kit } from './kit.ts';

const kits: Kit[] = [];
afterAll(async () => {
  await Promise.all(kits.map((k) => k.close()));
});

describe('pre-warmed session components', () => {
  it('prewarm starts the driver and the tool before any task, and a task racing the pre-warm shares its workers', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'warm' } }] }, { text: 'warm answer' }] },
    });
    kits.push(kit);
    const tools = kit.session.staged.artifacts.filter((a) => a.manifest.runtime === 'tool' && a.wasmPath);
    const warming = kit.session.components.prewarm(tools);
    // The task starts at once, while both instances are still instantiating.
    const r = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'go', source: 'task_md' });
    await warming;
    expect(r.exit).toBe('completed');
    expect(r.text).toBe('warm answer');
    const driver = await kit.session.components.driver();
    const tool = await kit.session.components.tool(tools.find((a) => a.name === 'echo')!);
    expect([driver.starts, tool.starts]).toEqual([1, 1]);
  }, 180_000); // a cold cache transpiles both components first

  it('prewarm of a session whose components all started already starts nothing more', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ text: 'plain answer' }] },
    });
    kits.push(kit);
    const tools = kit.session.staged.artifacts.filter((a) => a.manifest.runtime === 'tool' && a.wasmPath);
    await kit.session.components.prewarm(tools);
    const driver = await kit.session.components.driver();
    expect(driver.starts).toBe(1);
    await kit.session.components.prewarm(tools);
    const r = await kit.session.runTask({ taskId: 't2', contextId: 'c2', text: 'go', source: 'task_md' });
    expect(r.exit).toBe('completed');
    expect(driver.starts).toBe(1);
    expect((await kit.session.components.tool(tools[0]!)).starts).toBe(1);
  });

  it('warmUp (what mur serve runs once it is ready) starts the driver and the tool before any task, and the task reuses them', async () => {
    const kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'w' } }] }, { text: 'after warm-up' }] },
    });
    kits.push(kit);
    const tools = kit.session.staged.artifacts.filter((a) => a.manifest.runtime === 'tool' && a.wasmPath);
    await kit.session.warmUp(tools);
    const driver = await kit.session.components.driver();
    const tool = await kit.session.components.tool(tools[0]!);
    expect([driver.starts, tool.starts]).toEqual([1, 1]);
    const r = await kit.session.runTask({ taskId: 't3', contextId: 'c3', text: 'go', source: 'task_md' });
    expect(r.text).toBe('after warm-up');
    expect([driver.starts, tool.starts]).toEqual([1, 1]);
  });
});
