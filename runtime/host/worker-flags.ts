/**
 * The Node flags a component worker starts with: the parent's, minus its module loaders and minus
 * whatever a worker refuses.
 *
 * Loaders: a worker inherits `--import tsx` (how benches and scripts run), and on Node 24 it then
 * routes every import through the tsx hooks: the component glue's import went from ≈ 10 ms to
 * ≈ 160 ms (measured). The worker runs plain JavaScript and registers a loader itself when it
 * needs one (worker-boot.mjs).
 *
 * Refused flags: a worker refuses every V8 option in its execArgv (the image's heap and compiler
 * options, `--max-semi-space-size=1 --max-opt=2`; an operator's `--no-opt` or `--always-sparkplug`;
 * a bench's `--trace-gc`) and Node's per-process ones (`--v8-pool-size`): `new Worker` throws
 * ERR_WORKER_INVALID_EXEC_ARGV and no task runs. A worker needs none of them: V8's options are
 * process-wide and already apply to every isolate (each worker's heap limits are its
 * resourceLimits). Which flags those are is Node's rule, so Node is asked: a list kept here missed
 * one flag after another (`--trace-opt`, then `--always-sparkplug`, each a serving process whose
 * every task failed).
 */
import { Worker } from 'node:worker_threads';

const LOADER_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/**
 * A V8 option every worker refuses, added to each probe so that the probe's `new Worker` throws
 * before any thread starts, naming all the flags it refused.
 */
const SENTINEL = '--max-semi-space-size=1';

/** The refusal's message names the flags: "Initiated Worker with invalid execArgv flags: a, b". */
const REFUSED = /invalid execArgv flags: (.*)$/s;

/** The flags of `argv` that Node refuses in a worker's execArgv; undefined when its answer cannot be read. */
export function refusedInWorker(argv: readonly string[]): Set<string> | undefined {
  let w: Worker;
  try {
    w = new Worker('', { eval: true, execArgv: [...argv, SENTINEL] });
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
    const listed = REFUSED.exec((e as Error).message)?.[1]?.split(', ') ?? [];
    // The probe's own, named last; a parent's flag spelled the same (the image's) stays refused.
    const own = listed.lastIndexOf(SENTINEL);
    if (own < 0) return undefined;
    listed.splice(own, 1);
    return new Set(listed);
  }
  // A Node that takes V8 options in a worker: nothing is refused, and the probe's thread is not wanted.
  void w.terminate();
  return new Set();
}

const memo = new Map<string, string[]>();

/** The parent's Node flags without its module loaders and without what a worker refuses (see the header). */
export function workerExecArgv(argv: readonly string[] = process.execArgv): string[] {
  const key = argv.join('\0');
  const known = memo.get(key);
  if (known) return known;
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (LOADER_FLAGS.has(a.split('=', 1)[0]!)) {
      if (!a.includes('=')) i++; // its value is the next argument
      continue;
    }
    kept.push(a);
  }
  const refused = kept.length > 0 ? refusedInWorker(kept) : new Set<string>();
  // Node's answer unreadable (its message changed): no flags at all, which a worker always takes.
  const out = refused ? kept.filter((a) => !refused.has(a)) : [];
  memo.set(key, out);
  return out;
}
