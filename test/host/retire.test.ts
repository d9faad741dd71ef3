/**
 * Retiring an instance whose linear memory keeps growing (runtime/host/retire.ts): WebAssembly
 * memory never shrinks, so a leaking guest is replaced between calls instead of growing until its
 * cap fails a call. The sandbox probe's `hoard` op keeps 1 MiB per call for good: a known leak.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { drainWorkerPool } from '../../runtime/host/index.ts';
import { DEFAULT_RETIRE_GROWTH_BYTES, driverRetireGrowth, shouldRetire } from '../../runtime/host/retire.ts';
import { op, probe } from './probe.ts';

const MiB = 1048576;

afterAll(() => drainWorkerPool());

describe('retire policy (table)', () => {
  it.each([
    // baseline, now, growth allowed, retire?
    [undefined, 100 * MiB, 32 * MiB, false], // no first call measured yet
    [17 * MiB, 17 * MiB, 32 * MiB, false],
    [17 * MiB, 49 * MiB, 32 * MiB, false], // exactly the allowance: kept
    [17 * MiB, 49 * MiB + 65536, 32 * MiB, true], // one page past it
    [17 * MiB, 500 * MiB, 0, false], // 0: never
    [17 * MiB, 500 * MiB, undefined, false],
  ] as const)('baseline %s, now %s, growth %s → %s', (baseline, now, growth, want) => {
    expect(shouldRetire(baseline, now, growth)).toBe(want);
  });

  it('takes the driver allowance from MURMUR_DRIVER_RETIRE_GROWTH_MIB, 16 MiB by default, 0 to turn it off', () => {
    expect(driverRetireGrowth({})).toBe(DEFAULT_RETIRE_GROWTH_BYTES);
    expect(DEFAULT_RETIRE_GROWTH_BYTES).toBe(16 * MiB);
    expect(driverRetireGrowth({ MURMUR_DRIVER_RETIRE_GROWTH_MIB: '8' })).toBe(8 * MiB);
    expect(driverRetireGrowth({ MURMUR_DRIVER_RETIRE_GROWTH_MIB: '0' })).toBe(0);
  });

  it('refuses a MURMUR_DRIVER_RETIRE_GROWTH_MIB that is not a size, naming the variable (E-RUN-031)', () => {
    for (const bad of ['lots', '-1', 'Infinity']) {
      expect(() => driverRetireGrowth({ MURMUR_DRIVER_RETIRE_GROWTH_MIB: bad })).toThrow(
        expect.objectContaining({ code: 'E-RUN-031', message: expect.stringContaining('MURMUR_DRIVER_RETIRE_GROWTH_MIB') }),
      );
    }
  });
});

describe('an instance that keeps growing', () => {
  it('is retired between calls once it has grown past its allowance, and the next call runs on a fresh instance', async () => {
    const inst = await probe({}, { retireAfterGrowthBytes: 4 * MiB });
    const hoarded: unknown[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await op(inst, { op: 'hoard', mb: 1 });
      expect(r.status).toBe('passed');
      hoarded.push(r.body.value);
    }
    await inst.close();
    // The hoard restarts at 1 on each fresh instance; every call still answered.
    // Each start after the first is a retirement's fresh instance; the last call may itself have
    // retired its instance, with no call left to start another.
    expect(inst.starts).toBeGreaterThanOrEqual(2);
    expect(hoarded.filter((v, i) => i > 0 && v === 1).length).toBe(inst.starts - 1);
    expect([inst.starts - 1, inst.starts]).toContain(inst.retired);
    // Never more than the allowance plus the one call that crossed it.
    expect(Math.max(...(hoarded as number[]))).toBeLessThanOrEqual(6);
  });

  it('is kept, with its state, when no allowance is set (tools, hooks)', async () => {
    const inst = await probe();
    const hoarded: unknown[] = [];
    for (let i = 0; i < 8; i++) hoarded.push((await op(inst, { op: 'hoard', mb: 1 })).body.value);
    const grown = inst.memoryAfterCall;
    await inst.close();
    expect(hoarded).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(inst.starts).toBe(1);
    expect(inst.retired).toBe(0);
    expect(grown).toBeGreaterThan(8 * MiB);
  });
});
