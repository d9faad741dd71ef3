/** What a guest's trap was: the one reading of a trap's evidence, wherever the guest ran (instance.ts, inline.ts). */
import { GuestTrap, HostImportFailed, MemoryLimitExceeded, type HostFault } from './errors.ts';

export interface TrapEvidence {
  message: string;
  /** Largest linear memory of the instance at the trap. */
  memoryBytes: number;
  /** Pages a memory.grow asked for and did not get during the call (0 = none). */
  growFailedPages: number;
}

/**
 * What a trap was. A memory-limit kill needs evidence: a memory.grow that failed during the call,
 * the memory standing at the patched cap, or the engine saying it ran out of memory. Memory size
 * alone is no evidence (a guest at 1 MiB of a 16 MiB cap crashing on a file error is a crash).
 */
export function classifyTrap(component: string, fn: string, cap: number, t: TrapEvidence): HostFault {
  const PAGE = 65536;
  const capPages = Math.max(1, Math.floor(cap / PAGE));
  if (t.growFailedPages > 0) return new MemoryLimitExceeded(component, fn, cap, t.memoryBytes, t.growFailedPages * PAGE);
  if (t.memoryBytes >= capPages * PAGE || /out of memory/i.test(t.message)) return new MemoryLimitExceeded(component, fn, cap, t.memoryBytes);
  if (/host import .* failed/.test(t.message)) {
    const m = /host import (\S+) failed: (.*)/.exec(t.message);
    return new HostImportFailed(component, m?.[1] ?? 'unknown', m?.[2] ?? t.message);
  }
  return new GuestTrap(component, fn, t.message);
}
