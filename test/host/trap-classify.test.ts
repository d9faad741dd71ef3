/**
 * A memory-limit kill is reported only from evidence (a memory.grow that failed during the call, or
 * memory standing at the cap), never from the memory size of a crash. Real components: the
 * crash-tool WAT fixture (a crash at 1 MiB, a balloon that fails to grow at 9 MiB) and the JS
 * sandbox probe.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ComponentInstance, GuestTrap, MemoryLimitExceeded, loadComponent } from '../../runtime/host/index.ts';
import { classifyTrap } from '../../runtime/host/instance.ts';
import { GROW_FAILED_EXPORT, instrumentGrow } from '../../runtime/host/grow-probe.ts';
import { watFixture } from '../fixtures/build-wat.ts';

const MiB = 1048576;
const open: ComponentInstance[] = [];
afterAll(async () => {
  await Promise.all(open.map((i) => i.close()));
});

async function crashTool(memoryBytes: number): Promise<ComponentInstance> {
  const c = await loadComponent(await watFixture('crash-tool'));
  const inst = new ComponentInstance(c, { grants: { env: {}, networkAllow: [] }, deadlineMs: 20_000, memoryBytes });
  open.push(inst);
  return inst;
}

const run = (inst: ComponentInstance, data: string) => inst.call<{ status: string; data?: string }>(['run', 'run'], [{ data }]);

describe('trap classification from evidence', () => {
  it('a crash at 1 MiB under a 16 MiB cap (memory_bytes: 16777216) is a trap, not a memory kill', async () => {
    const inst = await crashTool(16 * MiB);
    const err = await run(inst, 'crash').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GuestTrap);
    expect(err).not.toBeInstanceOf(MemoryLimitExceeded);
    expect((err as GuestTrap).code).toBe('E-HOST-005');
    expect((await run(inst, 'ping')).data).toBe('ok');
  });

  it('a balloon whose grow fails at 9 MiB under a 16 MiB cap is a memory kill naming both sizes', async () => {
    const inst = await crashTool(16 * MiB);
    const err = await run(inst, 'balloon').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MemoryLimitExceeded);
    expect((err as MemoryLimitExceeded).message).toMatch(/grew linear memory to 9 MiB and asked for 8 MiB more, past its 16 MiB cap/);
    expect((err as MemoryLimitExceeded).code).toBe('E-HOST-004');
    // The failure is counted per call: the next crash is a crash again.
    const next = await run(inst, 'crash').catch((e: unknown) => e);
    expect(next).toBeInstanceOf(GuestTrap);
    expect(next).not.toBeInstanceOf(MemoryLimitExceeded);
  });

  it('the same crash under the default 512 MiB cap is a trap too', async () => {
    const inst = await crashTool(512 * MiB);
    expect(await run(inst, 'crash').catch((e: unknown) => e)).not.toBeInstanceOf(MemoryLimitExceeded);
  });

  it('classifies by evidence (table)', () => {
    const rows: Array<[string, { message: string; memoryBytes: number; growFailedPages: number }, string]> = [
      ['crash far below the cap', { message: 'unreachable', memoryBytes: 1 * MiB, growFailedPages: 0 }, 'GuestTrap'],
      ['crash just below the cap, no failed grow', { message: 'unreachable', memoryBytes: 15 * MiB, growFailedPages: 0 }, 'GuestTrap'],
      ['a failed grow well below the cap', { message: 'unreachable', memoryBytes: 9 * MiB, growFailedPages: 128 }, 'MemoryLimitExceeded'],
      ['memory standing at the cap', { message: 'unreachable', memoryBytes: 16 * MiB, growFailedPages: 0 }, 'MemoryLimitExceeded'],
      ['the engine reports out of memory', { message: 'RangeError: Out of memory', memoryBytes: 2 * MiB, growFailedPages: 0 }, 'MemoryLimitExceeded'],
      ['a failed host import', { message: 'host import murmur:x#y failed: boom', memoryBytes: 1 * MiB, growFailedPages: 0 }, 'HostImportFailed'],
    ];
    for (const [what, ev, kind] of rows) expect(classifyTrap('c', 'run.run', 16 * MiB, ev).name, what).toBe(kind);
  });

  it('instruments the fixture modules: every memory.grow routes through the recording helper', async () => {
    const c = await loadComponent(await watFixture('crash-tool'));
    for (const f of c.coreFiles) {
      const bytes = readFileSync(`${c.dir}/${f}`);
      const out = instrumentGrow(bytes);
      expect(out, f).toBeDefined();
      const mod = await WebAssembly.compile(out as Uint8Array<ArrayBuffer>);
      const hasGrow = out !== bytes;
      if (hasGrow) expect(WebAssembly.Module.exports(mod).map((e) => e.name)).toContain(GROW_FAILED_EXPORT);
    }
  });
});
