/**
 * `mur serve` once its start is over (serving, its warm-up done) and nothing has called it yet:
 * the Node binary's pages leave its resident set (the native addon's `unresidentExecutable`:
 * madvise DONTNEED of the binary's read-only mappings, runtime/native/exe.c).
 *
 * Why: most of what the start mapped of the binary — the bootstrap, the module loading and its
 * compiles, the staging, the warm-up's worker boots and component compiles — serves no task, and
 * it was ≈ 50 MiB of a ≈ 90 MiB serving process on Node 24 (docs/runtime.md). Without this it
 * stays resident until the first idle release, 30 s after the last task (runtime/memory.ts): the
 * whole life of a pre-warmed pod nobody calls, and for good for a capsule called more often than
 * that. The pages stay in the page cache, shared with every Node process of the node, and the
 * first task maps back the few it runs (minor faults).
 *
 * Not before the warm-up is over: what it maps would come back at once. Not when a request came
 * before that: a sleeping Capsule's wake holds the request that woke it until the pod serves, so
 * it arrives at ready, and a release under that running task cost it ≈ 20 ms (measured on
 * Node 24, docs/measurements/reference.md), where a first task that comes after the release paid
 * nothing measurable. Such a process's pages go at its first idle release instead. Without the
 * addon nothing is released and nothing is said.
 */
import { nativeAddon } from '../native-addon.ts';
import type { ActivityTracker } from '../telemetry/activity.ts';

/**
 * Once `warmedUp` settles (undefined: no warm-up), the binary's pages go if `activity` has seen
 * no work begin; one line says so (`out`). Resolves with the bytes released, or undefined when it
 * kept them (called meanwhile, or no addon). Never rejects.
 */
export async function startPagesGo(warmedUp: Promise<void> | undefined, activity: ActivityTracker, out?: (s: string) => void): Promise<number | undefined> {
  await warmedUp?.catch(() => {});
  if (activity.begun > 0) return undefined;
  const released = nativeAddon()?.unresidentExecutable?.();
  if (released === undefined || released < 0) return undefined;
  out?.(`ready: ${(released / 1048576).toFixed(1)} MiB of the Node binary's pages let go (the start's; the page cache keeps them)`);
  return released;
}
