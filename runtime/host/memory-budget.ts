/**
 * How many pre-instantiated spares this process can afford. A pod's memory limit is what a cluster
 * pays per capsule, and an idle spare is a whole worker thread (≈ 24 MiB RSS measured for a
 * SpiderMonkey component, more once it has run): with no limit the default stays 4; under a cgroup
 * limit the spares get what is left after the runtime's own base, one per SPARE_BUDGET.
 */
import { readFileSync } from 'node:fs';

/** The runtime with a driver and one tool running, before any spare (measured, rounded up). */
export const BASE_BYTES = 320 * 1048576;
/** One spare: its measured idle RSS with room for the growth of its first calls. */
export const SPARE_BUDGET_BYTES = 48 * 1048576;
export const MAX_SPARES = 4;

/** Spares for a memory limit in bytes (undefined: no limit known). Pure; see the table test. */
export function sparesFor(limitBytes: number | undefined): number {
  if (limitBytes === undefined || !Number.isFinite(limitBytes)) return MAX_SPARES;
  return Math.max(0, Math.min(MAX_SPARES, Math.floor((limitBytes - BASE_BYTES) / SPARE_BUDGET_BYTES)));
}

/** The memory limit of this process's cgroup (v2 memory.max, else v1), or undefined when unlimited or unknown. */
export function cgroupMemoryLimit(read: (p: string) => string = (p) => readFileSync(p, 'utf8')): number | undefined {
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    let text: string;
    try {
      text = read(file).trim();
    } catch {
      continue;
    }
    if (text === 'max') return undefined;
    const n = Number(text);
    // cgroup v1 reports "no limit" as a huge page-rounded number (≈ 2^63).
    if (Number.isFinite(n) && n > 0 && n < 2 ** 60) return n;
    return undefined;
  }
  return undefined;
}

/** MURMUR_SPARE_INSTANCES when set (0 turns spares off), else what the memory limit affords. */
export function defaultSpareCount(env: NodeJS.ProcessEnv = process.env, limit: () => number | undefined = cgroupMemoryLimit): number {
  const set = env.MURMUR_SPARE_INSTANCES;
  if (set !== undefined && set !== '' && Number.isFinite(Number(set))) return Math.max(0, Math.floor(Number(set)));
  return sparesFor(limit());
}
