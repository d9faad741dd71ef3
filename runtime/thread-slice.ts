/**
 * The scheduler slice of `mur serve`'s serving threads (MURMUR_THREAD_SLICE_US, default 100 µs):
 * the main thread and the component threads ask Linux's fair scheduler (EEVDF, kernel 6.12 and
 * later) for a shorter time slice than its default (0.7 ms × (1 + log2 CPUs): 1.4 ms on 2 CPUs).
 *
 * Why: a task is a chain of short bursts, each thread waking the next (the A2A request on the
 * main thread, the driver's turn on the component thread, the provider's answer relayed back, the
 * result): ≈ 15 wake-ups a task with a tool turn. On a node whose CPUs are busy, each woken
 * thread waited behind whatever held the CPU, and the time per task grew with the load far more
 * than the reference runtime's (issue 42). A thread with a shorter slice has an earlier virtual
 * deadline when it wakes, so EEVDF runs it sooner and may preempt the running task at once. It
 * does not get a larger share of the CPU: over time every runnable thread still gets its weight's
 * share. Measured in docs/measurements/reference.md (session 31).
 *
 * Who gets it: the main thread once the start-up work is done (a first run's transpile keeps the
 * default: throughput work), and each component worker as it boots (host/workers.ts passes the
 * slice and the addon's path; worker.ts applies it). The native call sets SCHED_RESET_ON_FORK with
 * it, so what those threads start afterwards (a shell tool's processes, a transpiler child, V8's
 * and libuv's helper threads, the token counter's worker) begins with the kernel's default.
 *
 * Where it cannot be had (no native addon, a kernel before 6.12 that ignores the request, a
 * real-time or idle policy set from outside, a seccomp profile refusing sched_setattr) the threads
 * keep the kernel's default and the runtime runs as before; when the variable was set explicitly,
 * `mur serve` says so on stderr (E-RUN-088).
 */
import { MurError } from './errors.ts';
import { envNonNegative } from './env-number.ts';
import { addonPath, nativeAddon, type NativeAddon } from './native-addon.ts';

export const SLICE_VARIABLE = 'MURMUR_THREAD_SLICE_US';
/** The default: the shortest slice the kernel grants (it clamps requests to 100 µs – 100 ms). */
export const DEFAULT_SLICE_US = 100;
export const MIN_SLICE_US = 100;
export const MAX_SLICE_US = 100_000;

const HINT = `set ${SLICE_VARIABLE} to the serving threads' scheduler slice in microseconds, from ${MIN_SLICE_US} to ${MAX_SLICE_US} (default ${DEFAULT_SLICE_US}), or 0 to leave the kernel's default`;

/** The slice asked for, in µs (0: the kernel's default is left alone); a bad value is E-RUN-087. */
export function threadSliceFromEnv(env: NodeJS.ProcessEnv): number {
  const us = envNonNegative(env, SLICE_VARIABLE, DEFAULT_SLICE_US, { code: 'E-RUN-087', unit: 'microseconds', hint: HINT, max: MAX_SLICE_US });
  if (us !== 0 && us < MIN_SLICE_US) {
    throw new MurError(
      'E-RUN-087',
      `${SLICE_VARIABLE} must be 0 or from ${MIN_SLICE_US} to ${MAX_SLICE_US} microseconds (the kernel grants no shorter slice), not ${JSON.stringify(env[SLICE_VARIABLE])}`,
      { hint: HINT },
    );
  }
  return us;
}

export type SliceOutcome = { applied: true; ns: number } | { applied: false; why: string };

/** What the thread's slice now is, read from what the native call answered. */
export function sliceOutcome(askedNs: number, answer: number | undefined): SliceOutcome {
  if (answer === undefined) return { applied: false, why: 'the native addon runtime/native/memory.node is not built or does not load' };
  if (answer < 0)
    return {
      applied: false,
      why:
        answer === -95
          ? 'the thread is not under the fair scheduler (a real-time, deadline or idle policy is kept)'
          : `sched_setattr failed (errno ${-answer})`,
    };
  if (answer !== askedNs) return { applied: false, why: 'the kernel keeps its own slice (custom slices need Linux 6.12 or later)' };
  return { applied: true, ns: answer };
}

/** The slice component workers booted from now on apply to themselves (0: none), and where the addon is. */
let forWorkers: { ns: number; addon: string } | undefined;

/**
 * The calling (main) thread's slice, and the one the component workers it boots from now on take.
 * `us` 0 leaves the kernel's default everywhere.
 */
export function applyThreadSlice(us: number, addon: NativeAddon | null = nativeAddon()): SliceOutcome {
  if (us === 0) {
    forWorkers = undefined;
    return { applied: false, why: `${SLICE_VARIABLE} is 0` };
  }
  const ns = Math.round(us * 1000);
  const outcome = sliceOutcome(ns, addon?.setThreadSlice?.(ns));
  const path = addonPath();
  forWorkers = outcome.applied && path ? { ns, addon: path } : undefined;
  return outcome;
}

/** For a component worker's boot (host/workers.ts): the slice to apply to itself, if any. */
export function workerSlice(): { ns: number; addon: string } | undefined {
  return forWorkers;
}
