/**
 * Keeps the runtime's secrets out of what other processes can read of it (docs/shell.md#what-a-command-cannot-read),
 * once, at start, on the main thread (runtime/cli/main.ts):
 *
 * 1. every value given (the provider key, each credential-shaped variable's value, a password in a
 *    URL on the command line) is overwritten in the kernel-visible argument and environment blocks
 *    (/proc/<pid>/cmdline and /proc/<pid>/environ show that memory, not process.env: deleting a
 *    variable leaves its bytes there). A variable whose value the runtime still reads is first
 *    copied off the block (assigning process.env makes glibc's setenv allocate a copy), since
 *    getenv reads the same bytes;
 * 2. the process is made non-dumpable (prctl), so its /proc files (environ, mem, fd/…) and ptrace
 *    are root's only: a tool process of the same non-root user can read nothing of the runtime's
 *    memory, where the key necessarily lives. The runtime image gets the same mark from its
 *    execute-only dynamic loader; this gives it to every other way of running `mur`.
 * 3. CAP_SYS_PTRACE (and CAP_SYS_RAWIO, CAP_SYS_MODULE: /proc/kcore, /dev/mem, kernel modules)
 *    leave the bounding set and every other capability set of every thread: a non-dumpable process
 *    is still readable to a caller holding CAP_SYS_PTRACE, and every process root starts holds the
 *    whole bounding set. So a shell tool of a runtime run as root can no longer read its memory.
 *    Not being allowed to (no CAP_SETPCAP: a non-root user, a container without it) is only worth
 *    a warning as root, where it leaves the memory readable.
 *
 * All go through the native addon (runtime/native/guard.c, caps.c). Without it the runtime runs,
 * and {@link guardWarnings} says loudly what stays readable.
 */
import { MIN_SECRET_LENGTH } from './secrets.ts';
import { addonPath, nativeAddon } from './native-addon.ts';

export interface Guarded {
  /** Whether the native addon was there to do it. */
  addon: boolean;
  /** Occurrences overwritten in the argument and environment blocks (-1: the blocks could not be found). */
  scrubbed: number;
  /** Whether the process is now non-dumpable. */
  nonDumpable: boolean;
  /** '' when no child can hold CAP_SYS_PTRACE any more, else why not (caps.c's dropCapabilities). */
  capabilities: string;
  /** The names of the variables whose values were protected (for the warning). */
  names: string[];
}

/**
 * Protects `values` (plus `names`' values in `env`): see the module comment. Values shorter than
 * MIN_SECRET_LENGTH are left alone (they would match unrelated bytes of the blocks).
 */
export function guardProcessSecrets(values: readonly string[], names: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): Guarded {
  const all = [...new Set([...values, ...names.map((n) => env[n] ?? '')])].filter((v) => v.length >= MIN_SECRET_LENGTH);
  const a = nativeAddon();
  if (!a?.scrub || !a.nonDumpable) return { addon: false, scrubbed: 0, nonDumpable: false, capabilities: 'no native addon', names: [...names] };
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && all.some((s) => v.includes(s))) env[k] = v;
  }
  const scrubbed = all.length > 0 ? a.scrub(all) : 0;
  const nonDumpable = a.nonDumpable();
  const capabilities = a.dropCapabilities ? a.dropCapabilities() : 'the native addon was built without caps.c: rebuild it';
  return { addon: true, scrubbed, nonDumpable, capabilities, names: [...names] };
}

/** What stays readable, said loudly (one line each), or nothing when all is protected. */
export function guardWarnings(g: Guarded, held: boolean, uid = process.getuid?.()): string[] {
  if (!held && g.names.length === 0) return [];
  const what = g.names.length > 0 ? g.names.join(', ') : 'the provider key';
  const out: string[] = [];
  if (!g.addon) {
    const path = addonPath();
    out.push(
      `warning: ${what} stay(s) readable to every process of this user (shell tools included) in /proc/${process.pid}/environ and /proc/${process.pid}/mem: ` +
        `the native addon runtime/native/memory.node ${path ? 'does not load' : 'is not built'} (node --import tsx scripts/build-native.ts; needs a C compiler) [E-RUN-050]`,
    );
  } else {
    if (g.scrubbed < 0)
      out.push(
        `warning: ${what} may stay readable in /proc/${process.pid}/environ: the kernel did not say where the start-up environment is (/proc/self/stat) [E-RUN-050]`,
      );
    if (!g.nonDumpable)
      out.push(
        `warning: this process could not be made non-dumpable: processes of this user can read its memory (/proc/${process.pid}/mem), the provider key included [E-RUN-050]`,
      );
  }
  if (uid === 0 && g.capabilities !== '') {
    out.push(
      `warning: running as root, and the processes it starts keep CAP_SYS_PTRACE (${g.capabilities}): a shell tool runs as root too and can read this process's memory ` +
        `(/proc/${process.pid}/mem), the provider key included; run mur as an unprivileged user, or give it CAP_SETPCAP [E-RUN-051]`,
    );
  }
  return out;
}
