/**
 * bench/cpu-load.ts: the burners a bench runs beside its arms really take CPU while on, and are
 * gone when stopped. Read from /proc (the kernel's account of each burner's CPU time).
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startCpuLoad } from '../../bench/cpu-load.ts';

/** User + system CPU ticks of a process so far. */
function ticks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** Resolves once `pid` has used more CPU than `from` ticks (each burner spins until stopped). */
async function burnsPast(pid: number, from: number): Promise<void> {
  while (ticks(pid) <= from) await new Promise((r) => setImmediate(r));
}

describe('background CPU load for benches', () => {
  it('runs the asked number of spinning processes until stopped, then none is left', async () => {
    const load = await startCpuLoad(2);
    try {
      expect(load.pids).toHaveLength(2);
      for (const pid of load.pids) await burnsPast(pid, ticks(pid));
    } finally {
      await load.stop();
    }
    for (const pid of load.pids) expect(existsSync(`/proc/${pid}/stat`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ')).toBe(false);
  });

  it('none asked: no process; a count that is not a whole number ≥ 0 is refused', async () => {
    const none = await startCpuLoad(0);
    expect(none.pids).toEqual([]);
    await none.stop();
    await expect(startCpuLoad(-1)).rejects.toThrow(/whole number of burners ≥ 0, got -1/);
    await expect(startCpuLoad(1.5)).rejects.toThrow(/got 1.5/);
  });
});
