/**
 * The Node binary's pages during a transpile (transpile-jco.ts), in whichever process or thread it
 * runs: the transpile worker of a first run (transpile-ahead.ts, in the runtime's own process) or
 * the transpiler process (transpile-child.ts).
 *
 * Why: a first run's peak resident set is the transpile's, and a third of it is not the
 * transpile's memory but the Node binary's code and read-only data mapped into the process
 * (measured on Node 24: ≈ 48 MiB of file pages as the transpile starts, ≈ 51 at its end, beside
 * ≈ 70 MiB anonymous). Most of them serve once: the process's start, the module loading, the
 * loading of jco's transpiler (452 KB of JavaScript and a 3.5 MB WebAssembly module) and the
 * compile of its functions (Liftoff compiles each one lazily, at its first call, so the first
 * transpile compiles what every later one runs). So they leave the resident set at two points
 * (the native addon's `unresidentExecutable`, madvise DONTNEED of the binary's read-only
 * mappings, runtime/native/exe.c; process-wide, so the main thread's go too): once jco's
 * transpiler has loaded, before the first transpile, and once that first transpile is done,
 * before the next. The pages stay in the page cache, shared with every other Node process, and
 * what runs next maps back the few it touches (minor faults). Peak RSS is a high-water mark: the
 * release before the first transpile lowers it by what the loading mapped, the one after it by
 * what that compile mapped, which the later transpiles would otherwise sit on top of.
 * Without the addon (not built) nothing is released and the transpile is the same.
 */
import { nativeAddon } from '../native-addon.ts';

/** The points at which a transpile lets the binary's pages go. */
export type PagePhase = 'jco loaded' | 'first transpiled';

export interface PageStep {
  phase: PagePhase;
  /** Bytes of the binary that left the resident set; -1 when /proc could not be read; absent without the addon. */
  released?: number;
}

const steps: PageStep[] = [];

/** Lets the binary's pages go at `phase`, once per phase in this isolate (see above). */
export function transpilePagesGo(phase: PagePhase): void {
  if (steps.some((s) => s.phase === phase)) return;
  const step: PageStep = { phase };
  const released = nativeAddon()?.unresidentExecutable?.();
  if (released !== undefined) step.released = released;
  steps.push(step);
}

/** The releases this isolate made so far, in order (a copy: the worker's and the child's replies carry it). */
export function transpilePageSteps(): PageStep[] {
  return steps.map((s) => ({ ...s }));
}
