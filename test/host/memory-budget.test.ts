/** Spares sized to the pod's memory limit (runtime/host/memory-budget.ts). */
import { describe, expect, it } from 'vitest';
import { cgroupMemoryLimit, defaultSpareCount, sparesFor } from '../../runtime/host/memory-budget.ts';

const MiB = 1048576;

describe('spares for a memory limit', () => {
  it.each([
    [undefined, 4],
    [256 * MiB, 0],
    [320 * MiB, 0],
    [367 * MiB, 0],
    [368 * MiB, 1],
    [416 * MiB, 2],
    [512 * MiB, 4],
    [8192 * MiB, 4],
  ])('limit %s bytes affords %i spares', (limit, n) => {
    expect(sparesFor(limit)).toBe(n);
  });

  it('reads cgroup v2 memory.max, "max" meaning no limit, and falls back to cgroup v1', () => {
    const files = (m: Record<string, string>) => (p: string) => {
      if (p in m) return m[p]!;
      throw new Error('ENOENT');
    };
    expect(cgroupMemoryLimit(files({ '/sys/fs/cgroup/memory.max': '536870912\n' }))).toBe(512 * MiB);
    expect(cgroupMemoryLimit(files({ '/sys/fs/cgroup/memory.max': 'max\n' }))).toBeUndefined();
    expect(cgroupMemoryLimit(files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': '268435456' }))).toBe(256 * MiB);
    expect(cgroupMemoryLimit(files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712' }))).toBeUndefined();
    expect(cgroupMemoryLimit(files({}))).toBeUndefined();
  });

  it('MURMUR_SPARE_INSTANCES overrides the limit; unset, the limit decides', () => {
    expect(defaultSpareCount({ MURMUR_SPARE_INSTANCES: '0' }, () => undefined)).toBe(0);
    expect(defaultSpareCount({ MURMUR_SPARE_INSTANCES: '2' }, () => 256 * MiB)).toBe(2);
    expect(defaultSpareCount({}, () => 256 * MiB)).toBe(0);
    expect(defaultSpareCount({}, () => undefined)).toBe(4);
  });
});
