/**
 * V8's last-resort collection of the calling isolate — the main thread's, or a worker's when a
 * worker calls it: full GCs until nothing more is freed, compacting, the young generation shrunk,
 * and each full GC ageing every function's bytecode (bytecode not run for `--bytecode-old-age`,
 * 6, full GCs is dropped and compiled again from source when next called). What
 * `LowMemoryNotification` does; Node exposes no API for it. V8's `gc` extension, switched on with
 * `v8.setFlagsFromString('--expose-gc')` and taken from a fresh vm context, is the one way in: the
 * global scope of the thread stays without a `gc`, and the flag is off again at once, for every
 * context made after this one (the component workers' among them).
 *
 * `keepCode`: the same collection with bytecode flushing off while it runs (`--no-flush-bytecode`
 * for its duration), so no function compiles again after it: the component worker's collection
 * when its thread settles a moment after the process goes quiet (host/thread.ts), which a task may
 * follow at once. Why the last-resort flavour and not V8's regular full GC: measured on the
 * image's Node 24, the regular one frees the same objects but compacts only the most fragmented
 * pages and keeps the young generation's size: old space 11.2 MiB committed after it against 5.2
 * after the last-resort one.
 * V8's flags are the process's, not the isolate's: a collection in another thread at the same
 * moment also keeps its bytecode, which costs nothing but the ageing of one GC.
 *
 * Used by runtime/memory.ts (the main isolate at the idle release; at the settle it collects only
 * its young generation: {@link youngGc}) and by the component worker (host/worker.ts, when its
 * thread settles or goes idle keeping its instances).
 */
type Gc = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' } | { type: 'minor' }) => void;
let gc: Gc | undefined;

/**
 * Whether this V8 reads `gc`'s options object: before V8 12 (Node 20) any `{ type: 'major', … }`
 * ran a scavenge, and a release freed nothing of the old generation (v8.GCProfiler on Node 20.20:
 * `Scavenge`; on 22 and 24: two `MarkSweepCompact`). There `gc()` without arguments is a full,
 * compacting collection, the nearest it has to the last-resort one.
 */
const OPTIONS_FORM = Number(process.versions.v8.split('.')[0]) >= 12;

function fullGc(collect: Gc): void {
  if (OPTIONS_FORM) collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  else collect();
}

/** Attempts at taking `gc` from a fresh context before giving up (see exposedGc). */
const GC_ATTEMPTS = 1000;

/**
 * V8's `gc` function, taken from a fresh vm context made while `--expose-gc` is on. The flag is
 * the process's, not the thread's: another thread that switches it off between this thread
 * switching it on and making its context leaves that context without a `gc` (eight component
 * threads settling at the same moment did, and the worker failed with "gc is not defined"). So
 * the context is asked whether it has one, and the flag set again until it does.
 */
function exposedGc(v8: typeof import('node:v8')): Gc {
  const vm = process.getBuiltinModule('node:vm');
  for (let attempt = 0; attempt < GC_ATTEMPTS; attempt++) {
    v8.setFlagsFromString('--expose-gc');
    const found = vm.runInNewContext("typeof gc === 'function' ? gc : undefined") as Gc | undefined;
    v8.setFlagsFromString('--no-expose-gc');
    if (found) return found;
  }
  throw new Error(`V8's gc function was not exposed in ${GC_ATTEMPTS} fresh contexts: other threads kept switching --expose-gc off`);
}

/** Collects everything collectable in this isolate now, as V8 does under memory pressure. */
export function lastResortGc(opts: { keepCode?: boolean } = {}): void {
  const v8 = process.getBuiltinModule('node:v8');
  gc ??= exposedGc(v8);
  if (!opts.keepCode) {
    fullGc(gc);
    return;
  }
  v8.setFlagsFromString('--no-flush-bytecode');
  try {
    fullGc(gc);
  } finally {
    v8.setFlagsFromString('--flush-bytecode');
  }
}

/**
 * Collects this isolate's young generation now (a scavenge), and nothing else: the settle's
 * collection of the main isolate (runtime/memory.ts). Why not a full one there: every full
 * collection taken through the `gc` extension — last-resort or regular, sync or async — marks the
 * Maglev code of the serving path (Node's HTTP parser callbacks, IncomingMessage, ServerResponse,
 * the streams under them) for deoptimization ("embedded weak objects cleared" under
 * `--trace-deopt`), and a warm `mur serve` then paid ≈ 1.3–1.7× the CPU per `tasks/get` for more
 * than 10 000 requests after it, and a quiet period with its task more CPU in all
 * (docs/measurements/memory.md). V8's own full collections, incremental, do not. A scavenge
 * leaves old-space objects and code alone.
 */
export function youngGc(): void {
  gc ??= exposedGc(process.getBuiltinModule('node:v8'));
  gc({ type: 'minor' });
}
