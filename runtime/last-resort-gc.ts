/**
 * V8's last-resort collection of the calling isolate — the main thread's, or a worker's when a
 * worker calls it: full GCs until nothing more is freed, compacting, and dropping the bytecode of
 * functions not running (they compile again from source when next called). What
 * `LowMemoryNotification` does; Node exposes no API for it. V8's `gc` extension, switched on with
 * `v8.setFlagsFromString('--expose-gc')` and taken from a fresh vm context, is the one way in: the
 * global scope of the thread stays without a `gc`, and the flag is off again at once, for every
 * context made after this one (the component workers' among them).
 *
 * Used by runtime/memory.ts (the main isolate, when the process goes idle) and by the component
 * worker (host/worker.ts, when its thread goes idle and keeps its instances).
 */
type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
let gc: Gc | undefined;

/** Collects everything collectable in this isolate now, as V8 does under memory pressure. */
export function lastResortGc(): void {
  if (!gc) {
    const v8 = process.getBuiltinModule('node:v8');
    v8.setFlagsFromString('--expose-gc');
    gc = process.getBuiltinModule('node:vm').runInNewContext('gc') as Gc;
    v8.setFlagsFromString('--no-expose-gc');
  }
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
