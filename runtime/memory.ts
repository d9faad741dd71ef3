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
 * for {@link SETTLE_MS}:
 * 1. the main isolate runs V8's last-resort collection (runtime/last-resort-gc.ts: full GCs until
 *    nothing more is freed, compacting, and dropping the bytecode of functions not running; they
 *    compile again from source when next called). Dropped objects holding memory outside the heap
 *    (the token tables' shared buffers) are freed here: an idle process allocates nothing, so no
 *    GC would come by itself. Measured on Node 24, `mur serve` idle after one task: heap used
 *    20.4 → 18.5 MiB, RSS −2.7 MiB;
 * 2. the freed memory goes back to the kernel in one call of the native addon
 *    (runtime/native/memory.c: `malloc_trim(0)`, which Node does not expose). Without the addon
 *    (not built: no C compiler; not glibc) this step is skipped and nothing fails: the runtime is
 *    the same, with the higher idle RSS (runtime/native-addon.ts loads it).
 * Both run on the main thread while the process is idle (≈ 20–60 ms, once per idle period).
 */
import { lastResortGc } from './last-resort-gc.ts';
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
  /** What had gone idle since the last release (`component thread`, `token worker`, …). */
  after: string[];
}

/** A release runs this long after the last part let something go (several stop within a moment of one another). */
export const SETTLE_MS = 1000;

/** Whether freed memory can be returned here (the addon is built and loads). */
export function canRelease(): boolean {
  return nativeAddon() !== null;
}

/** Collects garbage and returns the memory the process has freed to the kernel, now. */
export function releaseFreedMemory(after: string[] = []): Released {
  const rssBefore = process.memoryUsage.rss();
  lastResortGc();
  const a = nativeAddon();
  const returned = a?.trim() ?? false;
  return { addon: a !== null, returned, rssBefore, rssAfter: process.memoryUsage.rss(), after };
}

/** One line for a release: what went idle, and the RSS before and after. */
export function describeRelease(r: Released): string {
  const mib = (n: number): string => (n / 1048576).toFixed(1);
  const kept = r.addon ? '' : ' (freed memory kept: runtime/native/memory.node is not built, scripts/build-native.ts)';
  return `idle (${r.after.join(', ') || 'nothing'} let go): RSS ${mib(r.rssBefore)} → ${mib(r.rssAfter)} MiB${kept}`;
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
 * other part has let anything go for {@link SETTLE_MS}. Never keeps the process alive.
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
  }, SETTLE_MS);
  timer.unref();
}
