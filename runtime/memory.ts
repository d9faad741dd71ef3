/**
 * Giving memory back when the process goes idle.
 *
 * glibc keeps what a process frees in its arenas and returns only the top of each heap to the
 * kernel; everything freed below a live allocation stays resident. A serving runtime frees most of
 * what a burst of tasks used when it goes idle — the session's component thread collects its
 * garbage after `MURMUR_COMPONENT_IDLE_MS`, or ends when none of its instances is worth keeping (its
 * malloc arena is left nearly empty but resident; host/thread.ts), the token worker after
 * `MURMUR_TOKEN_WORKER_IDLE_MS`, the booted spare after `MURMUR_WORKER_IDLE_MS` — and a pod pays
 * for that memory until the next burst reuses it. Measured on the runtime image, `mur serve`
 * idle 45 s after one task: RSS 99.7 MiB, 92.0 MiB after `malloc_trim(0)` (docs/runtime.md).
 *
 * So the parts whose going idle means the process is idle — the session's component thread (no
 * component call for 30 s) and the token tables (no count for 30 s, so no inference turn) — call
 * {@link releaseWhenSettled} (the one busy case: a provider answer slower than that, whose turn's
 * code then compiles again when the answer comes); the others (the token worker, the spare),
 * which go while tasks may be running, only {@link noteLetGo}. Once nothing else has been let go
 * for {@link GATHER_MS}:
 * 1. the main isolate runs V8's last-resort collection (runtime/last-resort-gc.ts: full GCs until
 *    nothing more is freed, compacting, each of them ageing every function's bytecode, so what
 *    was not run for a few releases' worth is dropped; it compiles again from source when next
 *    called). Dropped objects holding memory outside the heap
 *    (the token tables' shared buffers) are freed here: an idle process allocates nothing, so no
 *    GC would come by itself. Measured on Node 24, `mur serve` idle after one task: heap used
 *    20.4 → 18.5 MiB, RSS −2.7 MiB;
 * 2. the freed memory goes back to the kernel in one call of the native addon
 *    (runtime/native/memory.c: `malloc_trim(0)`, which Node does not expose);
 * 3. the files the addon mapped and the process still uses (the token tables, 3.9 MiB) leave its
 *    resident set (`madvise(MADV_DONTNEED)`; their pages stay in the page cache and fault back in
 *    when read, ≈ 1 µs a page): a file's pages that no other process maps are private memory of
 *    the one that does, and the other capsules of the image on a node let theirs go when they idle;
 * 4. at an idle release only, the Node binary's code and read-only data leave the resident set
 *    too (runtime/native/exe.c, `madvise(MADV_DONTNEED)` on the executable's read-only mappings
 *    that hold no page of their own): ≈ 57 MiB of an idle quickstart pod's ≈ 100 MiB VmRSS, paged
 *    in by the start and the first tasks and unused while the pod waits. They stay in the page
 *    cache, shared with every other Node process of the images on the node; what the idle process
 *    still runs (timers, the kubelet's probes) maps its pages back at once, the rest the next task
 *    does: the task after an idle period ran 16 ms longer than a warm one with this, 9 ms without
 *    (bench/idle-task.ts on the image, docs/measurements/memory.md). Not at a settle, which comes
 *    between the tasks of a capsule called now and then, where that would be paid again and again.
 * Without the addon (not built: no C compiler; not glibc) steps 2–4 are skipped and nothing
 * fails: the runtime is the same, with the higher idle RSS (runtime/native-addon.ts loads it).
 * All run on the main thread while the process is idle (≈ 20–60 ms, once per idle period).
 *
 * That release comes 30 s after the last task; what a task leaves (its garbage in both isolates,
 * their young generations, glibc's freed arenas) stays resident until then: ≈ 12 MiB of private
 * memory in the image (docs/measurements/memory.md). So a lighter release comes first, a moment
 * after the process goes quiet: the settle ({@link settle}). The session's component thread,
 * once `MURMUR_SETTLE_MS` (default {@link DEFAULT_SETTLE_MS}) pass without a call, has its worker
 * run the same collection with its bytecode kept (last-resort-gc.ts: `keepCode`), then the main
 * isolate collects its young generation (last-resort-gc.ts `youngGc`), then steps 2 and 3 above.
 * Not a full collection of the main isolate: forced there, it deoptimized the serving path's
 * optimized code (Node's HTTP server and streams under the A2A door), and a `tasks/get` cost
 * ≈ 1.3–1.7× for more than 10 000 requests after each settle; the main isolate's old-space
 * garbage waits for V8's own collections or the idle release instead (≈ 2.5 MiB more private
 * memory in the 30 s after a task: docs/measurements/memory.md). Nothing is let go — no instance,
 * no thread, no table, no bytecode — so a task right after a settle compiles nothing again; and a
 * busy process never settles (a quiet period shorter than the delay is not one), and the delay
 * doubles while calls come soon after settles (host/thread.ts), so a steady load pays for none
 * after the first few.
 */
import { envNonNegative } from './env-number.ts';
import { lastResortGc, youngGc } from './last-resort-gc.ts';
import { nativeAddon } from './native-addon.ts';

export { addonPath } from './native-addon.ts';

/** What one release did, and the process's RSS around it. */
export interface Released {
  /** Whether the native addon was there to return freed memory to the kernel. */
  addon: boolean;
  /** Whether the allocator returned any (malloc_trim's answer; false without the addon). */
  returned: boolean;
  rssBefore: number;
  rssAfter: number;
  /** What had gone idle since the last release (`component thread`, `token worker`, …), or what went quiet (a settle). */
  after: string[];
  /** `settle`: the light release after the process went quiet (nothing let go, bytecode kept); `idle`: the release after parts were let go. */
  kind: 'idle' | 'settle';
  /** How long the collection and the trim took on the main thread (ms). */
  ms: number;
  /** A settle: how long the component thread's own collection took before it (ms). */
  threadMs?: number;
  /** An idle release: the bytes of the Node binary's pages that left the resident set (step 4), -1 when /proc could not be read; absent when not tried. */
  executable?: number;
}

/**
 * A release runs this long after the last part let something go: the thread and the token tables
 * go within milliseconds of one another (both 30 s after the last task's calls), and one release
 * does for both. Not longer: what a kept worker's idle collection freed stays resident until the
 * release's trim (its GC's bookkeeping, freed in glibc's arenas as its sweeping ends: ≈ 4 MiB of
 * private memory in the image, which a trim as the worker answers comes too early to return), and
 * with 1 s here a reading of the process in that second found it (docs/measurements/memory.md).
 */
export const GATHER_MS = 100;

/** Whether freed memory can be returned here (the addon is built and loads). */
export function canRelease(): boolean {
  return nativeAddon() !== null;
}

/** Collects garbage and returns the memory the process has freed to the kernel, now. */
export function releaseFreedMemory(after: string[] = [], kind: Released['kind'] = 'idle'): Released {
  const t0 = performance.now();
  const rssBefore = process.memoryUsage.rss();
  // A settle collects the main isolate's young generation only: a full collection forced here
  // deoptimizes the serving path's optimized code (last-resort-gc.ts youngGc).
  if (kind === 'settle') youngGc();
  else lastResortGc();
  const a = nativeAddon();
  const returned = a?.trim() ?? false;
  // The mapped files still in use (the token tables) leave the resident set: see the header.
  a?.unresidentMapped?.();
  // Last, so the collection's and the trim's own code is not what comes back first.
  const executable = kind === 'idle' ? a?.unresidentExecutable?.() : undefined;
  const r: Released = { addon: a !== null, returned, rssBefore, rssAfter: process.memoryUsage.rss(), after, kind, ms: performance.now() - t0 };
  if (executable !== undefined) r.executable = executable;
  return r;
}

/** One line for a release: what went idle (or quiet, for a settle), and the RSS before and after. */
export function describeRelease(r: Released): string {
  const mib = (n: number): string => (n / 1048576).toFixed(1);
  const kept = r.addon ? '' : ' (freed memory kept: runtime/native/memory.node is not built, scripts/build-native.ts)';
  const what = r.after.join(', ') || 'nothing';
  // A settle comes once per quiet period, a release once per idle one: a settle's line says what
  // it cost, as it may come after every task of a capsule called now and then.
  const head = r.kind === 'settle' ? `settled (${what} quiet)` : `idle (${what} let go)`;
  const thread = r.threadMs === undefined ? '' : ` (+ ${Math.round(r.threadMs)} ms in the component thread)`;
  const took = r.kind === 'settle' ? ` in ${Math.round(r.ms)} ms${thread}` : '';
  return `${head}: RSS ${mib(r.rssBefore)} → ${mib(r.rssAfter)} MiB${took}${kept}`;
}

const listeners = new Set<(r: Released) => void>();
let timer: NodeJS.Timeout | undefined;
let pending: string[] = [];

/** Called with each release {@link releaseWhenSettled} makes (serve's log line, tests). Returns an unsubscribe. */
export function onReleased(listener: (r: Released) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * `what` has been let go, which says nothing of the rest of the process (the token worker after
 * 10 s without a large text, a booted spare no instance took: both while tasks may be running):
 * freed at the next release, named in it, but no release for it — a last-resort GC drops the
 * bytecode of every function not running, which a busy process would compile again at once.
 */
export function noteLetGo(what: string): void {
  if (!pending.includes(what)) pending.push(what);
}

/**
 * `what` has just been let go and the process is idle (see above): return the freed memory once no
 * other part has let anything go for {@link GATHER_MS}. Never keeps the process alive.
 */
export function releaseWhenSettled(what: string): void {
  noteLetGo(what);
  clearTimeout(timer);
  timer = setTimeout(() => {
    const after = pending;
    pending = [];
    timer = undefined;
    const r = releaseFreedMemory(after);
    for (const l of listeners) l(r);
  }, GATHER_MS);
  timer.unref();
}

/**
 * `what` went quiet (the session's component thread: no call for `MURMUR_SETTLE_MS`, its worker's
 * garbage collected already): collect the main isolate's garbage, bytecode kept, and return the
 * freed memory now (see the header). None while an idle release is due: it is about to do more.
 * Returns what it did, or undefined when it left it to that release.
 */
export function settle(what: string, threadMs?: number): Released | undefined {
  if (timer) return undefined;
  const r = releaseFreedMemory([what], 'settle');
  if (threadMs !== undefined) r.threadMs = threadMs;
  for (const l of listeners) l(r);
  return r;
}

export const DEFAULT_SETTLE_MS = 500;

/**
 * MURMUR_SETTLE_MS, or the default: how long the session's component thread goes without a call
 * before the process settles (see the header; 0: never). Anything but a number of ms ≥ 0 is
 * refused by name.
 */
export function settleMs(env: NodeJS.ProcessEnv = process.env): number {
  return envNonNegative(env, 'MURMUR_SETTLE_MS', DEFAULT_SETTLE_MS, {
    code: 'E-RUN-086',
    unit: 'milliseconds',
    hint: `set how long the process must be quiet (no component call) before it collects its garbage and returns the freed memory (default ${DEFAULT_SETTLE_MS}), or 0 to wait for the idle release alone`,
  });
}
