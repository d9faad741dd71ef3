/**
 * `mur run` is one task in a process that exits after it: what it costs a machine is its peak
 * resident set (what /usr/bin/time, a CI job's memory limit and a pod's scheduler see), not the speed
 * of code that runs once. Measured on a script capsule (docs/measurements/reference.md),
 * most of that peak is not the run's own memory but two things a one-shot run does not need to
 * keep:
 *
 * - The Node binary's pages. The start maps ≈ 34–36 MiB of the binary's code and read-only data
 *   (a bare `node -e 0`: 40 MiB RSS on Node 20, 43 on Node 24, of which 6–8 MiB anonymous), and
 *   loading `mur run`'s code, staging and compiling the components map more (at the end of a
 *   script run: 42 of 58 MiB on Node 20, 51 of 71 on Node 24 are file pages). Most are used once:
 *   the start's bootstrap, the parser of modules already parsed. So the run lets them go
 *   ({@link releasePages}: the native addon's `unresidentExecutable`, madvise DONTNEED of the
 *   binary's read-only mappings, runtime/native/exe.c) at the phase boundaries: as `mur run`
 *   starts (before its modules load), once a script capsule's code has loaded, and once its
 *   components are loaded, before the task. The pages stay in the page cache, shared with every
 *   other process mapping the binary; what runs next maps the few it needs back (minor faults).
 *   Peak RSS is a high-water mark, so only a release before the peak lowers it: the peak of a
 *   script run is now the start itself plus main.js (≈ Node's floor), not the end of the run.
 *   Without the addon (not built) nothing is released and the run is the same.
 * - TurboFan. While `mur run` loads its code, Node's own path functions (normalizeString,
 *   getPathFromURLPosix: called for every module resolved and file staged) get hot enough for V8's
 *   optimizing compiler (`--trace-opt`: one TurboFan job on Node 24, five to eight on Node 20),
 *   whose compile on a background thread maps the compiler's code pages and allocates its zones
 *   (≈ 4 MiB of the peak on Node 24) to speed up code that has mostly run already.
 *   So TurboFan is off (`--no-turbofan`, set with v8.setFlagsFromString: V8 reads the flag at each
 *   tier-up decision, so it holds from then on) from the start of `mur run` until the task runs,
 *   and on again for the task ({@link beforeTask}: a capsule's host calls and its guest glue may run
 *   for minutes), or as soon as staging says the capsule is an agent one ({@link agentRun}: a
 *   conversation of turns, not a one-shot burst). Node's `--no-opt`/`--no-turbofan`/`--jitless`
 *   given by the user (command line or NODE_OPTIONS) are left as they are.
 *
 * No re-exec with start-time flags: a second Node start costs more than everything above saves.
 */
import v8 from 'node:v8';
import { nativeAddon } from '../native-addon.ts';

/** The points of a one-shot run at which it lets the binary's pages go or sets a V8 flag. */
export type Phase = 'start' | 'loaded' | 'task' | 'end';

/** What the run did at each phase, in order (read by tests and the measurements). */
export interface OneShotStep {
  phase: Phase;
  /** Bytes of the binary that left the resident set; -1 when /proc could not be read; absent without the addon. */
  released?: number;
  /** The V8 flag set at this phase, if one was. */
  flag?: string;
}

const steps: OneShotStep[] = [];
let turbofanOff = false;

/**
 * The user chose the optimizing compiler's setting themselves: it is theirs to keep. Node takes
 * V8's flags on its command line; of these, NODE_OPTIONS admits only --jitless.
 */
function userSetsTurbofan(): boolean {
  const args = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return args.some((a) => /^--(no-)?(opt|turbofan|jitless)(=|$)/.test(a.replace(/_/g, '-')));
}

function setFlag(flag: string, step: OneShotStep): void {
  v8.setFlagsFromString(flag);
  step.flag = flag;
}

/** Lets the binary's pages go (see the module comment), recording the phase. */
function releasePages(phase: Phase): OneShotStep {
  const step: OneShotStep = { phase };
  const released = nativeAddon()?.unresidentExecutable?.();
  if (released !== undefined) step.released = released;
  steps.push(step);
  return step;
}

/** `mur run` starts, before its modules load: the start's pages go, TurboFan is off until the task. */
export function startOneShot(): void {
  const step = releasePages('start');
  if (!turbofanOff && !userSetsTurbofan()) {
    setFlag('--no-turbofan', step);
    turbofanOff = true;
  }
}

function turbofanBack(step: OneShotStep): void {
  if (!turbofanOff) return;
  setFlag('--turbofan', step);
  turbofanOff = false;
}

/** A script capsule's code has loaded (the script session's modules): the loading's pages go. */
export function scriptLoaded(): void {
  releasePages('loaded');
}

/** The components are loaded and the task is next: the loading's pages go, TurboFan is back for the task. */
export function beforeTask(): void {
  turbofanBack(releasePages('task'));
}

/** TurboFan back on without releasing anything, recorded when it was off. */
function turbofanBackAt(phase: Phase): void {
  const step: OneShotStep = { phase };
  turbofanBack(step);
  if (step.flag) steps.push(step);
}

/** Staging found an agent capsule: TurboFan is back for its turns (nothing more is released). */
export function agentRun(): void {
  turbofanBackAt('loaded');
}

/**
 * The run is over, however it ended (a usage error, a staging failure): TurboFan is back if it is
 * still off, for a caller that runs `mur run` in its own process and carries on (tests).
 */
export function endOneShot(): void {
  turbofanBackAt('end');
}

/** The steps this process took so far (a copy). */
export function oneShotSteps(): OneShotStep[] {
  return steps.map((s) => ({ ...s }));
}
