/**
 * The runtime's one native addon, runtime/native/memory.node (memory.c + guard.c + caps.c + exe.c, built by
 * scripts/build-native.ts), loaded once for every part that uses it: runtime/memory.ts (freed
 * memory back to the kernel) and runtime/process-guard.ts (secrets out of /proc/<pid>/environ and mem).
 * Looked for beside this module (`native/memory.node`, sources and dist/) and one folder up (the
 * image's bundle in dist/runtime/cli/). Without it (not built: no C compiler; another platform or C
 * library) the runtime runs, and each user says what it cannot do.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface NativeAddon {
  /** glibc's malloc_trim(0): whether memory was returned. */
  trim(): boolean;
  /** The file's pages mapped (shared with every process mapping it; unmapped when collected), or null when it cannot be. */
  mapFile?(path: string): ArrayBuffer | null;
  /** madvise(MADV_DONTNEED) of every mapping mapFile made and V8 has not collected: bytes advised (their pages come back from the page cache when read). */
  unresidentMapped?(): number;
  /** Overwrites each value in the kernel-visible argument and environment blocks; -1 when they cannot be found. */
  scrub?(values: string[]): number;
  /** prctl(PR_SET_DUMPABLE, 0); whether the process is now non-dumpable. */
  nonDumpable?(): boolean;
  /** CAP_SYS_PTRACE, CAP_SYS_RAWIO, CAP_SYS_MODULE out of every set, bounding set included, on every thread: '' or what failed. */
  dropCapabilities?(): string;
  /** madvise(MADV_DONTNEED) of the running executable's read-only mappings holding no page of their own (exe.c): bytes that were resident in them, -1 without /proc. */
  unresidentExecutable?(): number;
}

let addon: NativeAddon | null | undefined;

/** The addon's path, or undefined when it is not built. */
export function addonPath(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  return [join(here, 'native', 'memory.node'), join(here, '..', 'native', 'memory.node')].find((p) => existsSync(p));
}

/** The loaded addon, or null when it is not built or does not load here. */
export function nativeAddon(): NativeAddon | null {
  if (addon !== undefined) return addon;
  const path = addonPath();
  try {
    addon = path ? (createRequire(import.meta.url)(path) as NativeAddon) : null;
  } catch {
    addon = null; // built for another platform or C library: run without it
  }
  return addon;
}
