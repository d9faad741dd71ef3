/**
 * This runtime against the reference runtime (Murmur, Rust + Wasmtime), side by side: the SAME
 * components in both arms — the reference's own prebuilt `murmur-driver-anthropic.wasm`,
 * `echo-tool.wasm` and script capsule `capsule-allowlisted.wasm`, unchanged, packed into the same
 * `.mur.zip` files and published with each runtime's own `mur publish` (reference-arms.ts) — against
 * the same scripted provider, from the same client.
 *
 * Nothing of the reference is in this repository: the bench takes its CLI and its fixture folder
 * from the environment and stops (exit 1) saying what to set when they are missing:
 *   MURMUR_REFERENCE_BIN       the reference's `mur` binary (cargo build --release -p murmur-cli)
 *   MURMUR_REFERENCE_FIXTURES  its crates/murmur-cli/tests/fixtures folder (holds the components)
 * `--ours-only` runs this runtime's arm alone (still needs MURMUR_REFERENCE_FIXTURES).
 *
 * What each arm includes (the process tree measured: the serving process and its children):
 * - `ours (image)`: the runtime image itself — its Node (24), /app, ENV and ENTRYPOINT, run in a
 *   chroot of its unpacked files (image-root.ts; test/images/build.sh builds the image first when
 *   its inputs changed) — what a pod runs: `mur serve` with --metrics-port 0 (no /metrics
 *   listener), its component cache, the session's trace.jsonl; `mur run` for the script capsule;
 * - `ours`: `bin/mur` from compiled dist/ (`npm run build` first; MUR_FROM=dist) on this machine's
 *   node with the image's ENTRYPOINT node flags and malloc settings, otherwise as above
 *   (`--ours image|dist|both`, default both);
 * - `reference`: the reference's `mur run --manifest … --json --lifecycle-after-task sleep` (agent
 *   capsules serve A2A; `sleep` keeps it taking tasks), its trace.jsonl, no compiled-component cache
 *   (it compiles at every start); `mur run --manifest` for the script capsule.
 * The capsule manifest is the same text for both (the reference's format: inference.transport/
 * endpoint/api_key, network.allow, lifecycle.task_acceptance: queue). Each task is two provider
 * turns: a `tool_use` of echo-tool, then the answer; with `--one-turn` the throughput and steady
 * windows' tasks are one instant provider turn (the answer alone: the shape of issue 42's
 * time-per-task target), the other rows' tasks as before. No hooks bound.
 *
 * The client is the same for every arm (task-poller.ts): each task is a non-blocking JSON-RPC
 * `message/send` (`configuration.blocking: false`; the reference always answers `submitted`), and
 * one poller sweeps `tasks/get` for all outstanding tasks every 10 ms over one keep-alive agent (the
 * reference closes every connection itself); a task is done when the sweep sees it completed, so a
 * time from send to completed reads up to 10 ms late. The scripted provider (test/provider/, real
 * HTTP, the Anthropic wire format) runs in a node process of its own (provider-process.ts), so its
 * answers never queue behind the client. As a check on the client, the throughput row is printed
 * beside the spacing of the `task_end` events in each side's own trace (trace.jsonl under the
 * --workdir given: (last − first) / (n − 1) over the throughput tasks), which no client affects.
 *
 * Rows, per round and per arm (the arms alternate, the order reversing every other round; the
 * paired ratio is ours / reference round by round):
 * - first run ever: empty component caches (ours: a fresh MURMUR_COMPONENT_CACHE, so the transpile
 *   runs; the reference keeps no cache) → first task completed: wall, CPU (user + system of the
 *   process tree), max RSS (VmHWM summed over the tree when the task completed) and the tree's peak
 *   RSS sampled every 20 ms while it ran (counts children that exited before the end), and its
 *   anonymous RSS likewise (RssAnon + RssShmem: without the file-backed pages the RSS sum counts
 *   once per process mapping them, a node binary's ≈ 40 MiB for the serving process and again for
 *   its transpiler child, though the kernel holds them once);
 * - warm start: process start → agent card URL printed (ready), → first task completed;
 * - memory after one task: RSS and private memory (Private_Clean + Private_Dirty of smaps_rollup:
 *   the pages no other process maps; RSS also counts shared pages) and anonymous memory (no file's
 *   pages: what the node gets back when the process ends, proc-tree.ts) of the tree 1 s, 20 s and
 *   45 s after the first task completed (why 20 s and 45 s: IDLE_MS below);
 * - a task after that idle: the next task's time from send to completed (ours starts its component
 *   thread and instances afresh for it; the reference has nothing to restart);
 * - throughput: then `--tasks` (100) tasks from `--senders` (8) concurrent senders, each sending its
 *   next task once its last completed: the client's wall / tasks, and the trace's task_end spacing;
 *   and the CPU the process tree spent over them per task (user + system of all its threads: what
 *   the node's cores pay, which decides the time per task once other work competes for them), and
 *   after the table the same by thread name (proc-tree.ts `treeThreads`: the main thread, the
 *   component thread `WorkerThread`, V8's compiler and GC helpers `V8Worker`, the reference's
 *   `tokio-rt-worker`);
 * - memory after the last task: RSS and private 1 s, 20 s and 45 s after it; peak RSS of the tree
 *   sampled every 20 ms from process start to the 45 s reading, and VmHWM summed at the end;
 * - steady state, then (`--steady N`, default 300; 0 skips it): N more tasks untimed, then `--tasks`
 *   timed from the same senders: time, trace spacing and CPU per task once the process is warm (the
 *   first window is a process's first hundred tasks after its start and an idle release: its JIT
 *   tiers and the component thread's glue still warming, which the reference, compiled ahead of
 *   time, does not pay). Both windows are reported;
 * - with `--extra-turn`, then: `--tasks` tasks of one tool turn and `--tasks` of two, back to back
 *   (the client's time per task of each, and their difference: what one more tool turn costs);
 * - script capsule end to end: `mur run` of capsule-allowlisted.wasm (invokes echo-tool once, writes
 *   out/result.txt), wall and max RSS (/usr/bin/time), warm caches.
 *
 *   node --import tsx bench/reference.ts [--rounds 3] [--tasks 100] [--senders 8] [--ours image|dist|both] [--ours-only]
 *     [--extra-turn] [--one-turn] [--steady N] [--load N] [--load-as processes|pods] [--ours-flags 'name=<node flags>' …]
 *
 * --load N: N spinning processes (cpu-load.ts) beside every arm while its throughput (and extra
 * tool turn) tasks run, none during the start, memory and script rows.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmp } from '../test/loop/kit.ts';
import { spawnProvider } from './provider-process.ts';
import { layoutNote, loadAsArg, withBenchLoad, type BenchLoad } from './cpu-load.ts';
import { TaskClient } from './task-poller.ts';
import { samplePeak, threadCpuPer, threadLine, treeMemory, treeStat, treeThreads, type Memory, type Tree } from './proc-tree.ts';
import { imageRoot } from './image-root.ts';
import {
  API_KEY,
  TASK_TURNS,
  TWO_TOOL_TURNS,
  agentYaml,
  flagArms,
  ours,
  reference,
  referenceInputs,
  traceSpacing,
  windowTurns,
  type Subject,
} from './reference-arms.ts';
import { choiceArg, countArg, fmtMiB, fmtRate, fmtTime, machineLine, pairedRecords, pairedRows, spread, summarize, table, numArg } from './paired.ts';

const ROUNDS = numArg('rounds', 3);
const TASKS = numArg('tasks', 100);
const SENDERS = numArg('senders', 8);
const OURS_ONLY = process.argv.includes('--ours-only');
/** --one-turn: the throughput and steady windows' tasks are one instant provider turn each (reference-arms.ts `windowTurns`). */
const WINDOW = windowTurns();
/**
 * --extra-turn: after the memory readings, --tasks tasks of one tool turn then --tasks of two, from
 * the same senders, back to back: what each extra tool turn costs a task (the difference of their
 * times per task; issue 42's ≤ ×1.25). Off by default: it adds ≈ 2 × --tasks tasks to a round.
 */
const EXTRA_TURN = process.argv.includes('--extra-turn');
/**
 * --steady N (default 300; 0: none): after every other reading, N more tasks untimed, then --tasks
 * timed: the time and CPU per task once the process has warmed (its JIT tiers, the component
 * thread's glue), beside the first window's, which measures a process's first hundred tasks after
 * its start and an idle release. Both are reported; neither replaces the other.
 */
const STEADY = countArg('steady', 300);
/**
 * --load N: N processes spinning on the cores (cpu-load.ts) while each arm's throughput and extra
 * tool turn runs are measured, the same for every arm: the per-task ratio on a busy node (issue 42:
 * it must not grow under load). 0 (default): none.
 */
const LOAD = countArg('load', 0);
/**
 * --load-as pods: the spinning processes in a cgroup of their own and each arm's serving process tree
 * in another of the same weight, as kubelet lays out two pods on a node (cpu-load.ts; needs root and
 * the cpu controller); processes (default): all in the bench's own cgroup, shared thread by thread.
 */
const LOAD_AS = loadAsArg();
/** Which of this runtime's arms run: the runtime image's files (what a pod runs), dist/ on this machine's node, or both. */
const OURS_ARG = choiceArg('ours', ['image', 'dist', 'both'] as const, 'both');
const OURS_KINDS = (OURS_ARG === 'both' ? ['image', 'dist'] : [OURS_ARG]) as ('image' | 'dist')[];
/** --ours-flags 'name=<node flags>' (repeatable): one more arm of each of our kinds (reference-arms.ts `flagArms`). */
const FLAG_ARMS = flagArms('ours-flags');

const { bin: REF_BIN, fixtures: REF_FIX } = referenceInputs('reference bench', OURS_ONLY);

/**
 * Memory readings after a task, in ms. 1 s: what the process holds right after work. 20 s: this
 * runtime lets go of the booted worker it keeps for the next instance start (and the token
 * counter's worker) after 10 s idle, and Node 24's V8 keeps an ended worker's heap pages in a
 * process-wide pool for 8 s more before it returns them (measured: a worker's 30 MiB stayed
 * resident 2 s after terminate(), gone 9.5 s after). 45 s: the session's component thread is let go
 * after 30 s without a call (MURMUR_COMPONENT_IDLE_MS), and its heap pages 8 s after that.
 */
const IDLE_MS = [1_000, 20_000, 45_000] as const;

/** The tree's memory at each of IDLE_MS after `since` (a performance.now() reading). */
async function memoryAfter(pid: number, since: number): Promise<Memory[]> {
  const out: Memory[] = [];
  for (const ms of IDLE_MS) {
    await new Promise((r) => setTimeout(r, Math.max(0, since + ms - performance.now())));
    out.push(treeMemory(pid));
  }
  return out;
}

function capsule(s: Subject, endpoint: string): string {
  const dir = tmp(`ref-${s.name.replace(/\W+/g, '-')}-capsule-`);
  writeFileSync(join(dir, 'murmur.yaml'), agentYaml(endpoint, TASKS + SENDERS));
  return dir;
}

type Fig = {
  cold: Tree & { wall: number; peak: number; peakAnon: number };
  ready: number;
  firstTask: number;
  afterOne: Memory[];
  afterIdle: number;
  perTask: number;
  /** CPU (user + system, every thread of the process tree) of the throughput run, per task (ms). */
  cpuPerTask: number;
  /** The same by thread name (proc-tree.ts `treeThreads`): which thread spends it. */
  threadCpu: Map<string, number>;
  spacing: number;
  afterLast: Memory[];
  /** --extra-turn: time per task of the one-tool-turn run and of the two-tool-turn run after it (ms). */
  turns?: { one: number; two: number };
  /** --steady: time, trace spacing and CPU per task of --tasks tasks after STEADY more (ms). */
  steady?: { perTask: number; spacing: number; cpuPerTask: number };
  peak: number;
  hwm: number;
  script: { wall: number; hwm: number };
};

/** First run ever: empty component caches, start → first task completed. */
async function coldRun(s: Subject): Promise<Fig['cold']> {
  const p = await spawnProvider({ turns: TASK_TURNS, apiKey: API_KEY });
  const sv = s.serve(capsule(s, p.url), true);
  const peak = samplePeak(sv.proc.pid!);
  const peakAnon = samplePeak(sv.proc.pid!, 20, 'anon');
  try {
    const client = new TaskClient(await sv.url);
    await client.task(0);
    const wall = performance.now() - sv.t0;
    const cold = { ...treeStat(sv.proc.pid!), peak: peak.stop(), peakAnon: peakAnon.stop(), wall };
    client.close();
    return cold;
  } finally {
    await stopAll(sv, p);
  }
}

/**
 * A failed task or run ends the bench with an error: the serving process and the provider are
 * stopped first either way, so no arm's process outlives the bench.
 */
async function stopAll(...procs: { stop(): Promise<unknown> }[]): Promise<void> {
  for (const x of procs) await x.stop().catch(() => undefined);
}

async function round(s: Subject, bench: BenchLoad): Promise<Fig> {
  const cold = await coldRun(s);
  // Warm start, one task, idle, one task; the throughput run, idle.
  const extra = EXTRA_TURN ? [...Array.from({ length: TASKS }, () => TASK_TURNS).flat(), ...Array.from({ length: TASKS }, () => TWO_TOOL_TURNS).flat()] : [];
  const steadyTasks = STEADY ? STEADY + TASKS : 0;
  const p = await spawnProvider({
    turns: [
      ...TASK_TURNS,
      ...TASK_TURNS,
      ...Array.from({ length: TASKS }, () => WINDOW.turns).flat(),
      ...extra,
      ...Array.from({ length: steadyTasks }, () => WINDOW.turns).flat(),
    ],
    apiKey: API_KEY,
  });
  const sv = s.serve(capsule(s, p.url), false);
  const loads: { stop(): Promise<unknown> }[] = [];
  let fig: Omit<Fig, 'cold' | 'spacing' | 'script' | 'steady'> & { steady?: { perTask: number; cpuPerTask: number } };
  try {
    const pid = sv.proc.pid!;
    const peak = samplePeak(pid);
    const url = await sv.url;
    const ready = performance.now() - sv.t0;
    const client = new TaskClient(url);
    await client.task(0);
    const firstDone = performance.now();
    const afterOne = await memoryAfter(pid, firstDone);
    const a0 = performance.now();
    await client.task(1);
    const afterIdle = performance.now() - a0;
    const load = await bench.start(pid);
    loads.push(load);
    const cpu0 = treeStat(pid).cpuMs;
    const threads0 = treeThreads(pid);
    const t0 = performance.now();
    await client.run(2, TASKS, SENDERS);
    const lastDone = performance.now();
    const cpuPerTask = (treeStat(pid).cpuMs - cpu0) / TASKS;
    const threadCpu = threadCpuPer(threads0, treeThreads(pid), TASKS);
    await load.stop();
    const afterLast = await memoryAfter(pid, lastDone);
    const hwm = treeStat(pid).hwm;
    const peakRss = peak.stop();
    // After the readings above, so none of their rows moves with the flag. The provider's turns are
    // taken in order: a capsule runs its tasks one at a time (task_acceptance: queue).
    let turns: Fig['turns'];
    if (EXTRA_TURN) {
      const extraLoad = await bench.start(pid);
      loads.push(extraLoad);
      const e0 = performance.now();
      await client.run(2 + TASKS, TASKS, SENDERS);
      const e1 = performance.now();
      await client.run(2 + 2 * TASKS, TASKS, SENDERS);
      turns = { one: (e1 - e0) / TASKS, two: (performance.now() - e1) / TASKS };
      await extraLoad.stop();
    }
    let steady: { perTask: number; cpuPerTask: number } | undefined;
    if (STEADY) {
      const first = 2 + TASKS + (EXTRA_TURN ? 2 * TASKS : 0);
      const steadyLoad = await bench.start(pid);
      loads.push(steadyLoad);
      await client.run(first, STEADY, SENDERS);
      const c0 = treeStat(pid).cpuMs;
      const w0 = performance.now();
      await client.run(first + STEADY, TASKS, SENDERS);
      steady = { perTask: (performance.now() - w0) / TASKS, cpuPerTask: (treeStat(pid).cpuMs - c0) / TASKS };
      await steadyLoad.stop();
    }
    client.close();
    fig = {
      ready,
      firstTask: firstDone - sv.t0,
      afterOne,
      afterIdle,
      perTask: (lastDone - t0) / TASKS,
      cpuPerTask,
      threadCpu,
      afterLast,
      ...(turns ? { turns } : {}),
      ...(steady ? { steady } : {}),
      peak: peakRss,
      hwm,
    };
  } finally {
    // A cpu-load set already stopped stops again as a no-op (cpu-load.ts).
    await stopAll(...loads, sv, p);
  }
  const spacing = traceSpacing(s.name, sv.workdir, TASKS, (EXTRA_TURN ? 2 * TASKS : 0) + steadyTasks);
  const { steady: warm, ...rest } = fig;
  const steady = warm && { ...warm, spacing: traceSpacing(s.name, sv.workdir, TASKS) };
  return { cold, ...rest, ...(steady ? { steady } : {}), spacing, script: s.script() };
}

/** One untimed task and script run per arm: fills our warm component cache (and the OS page cache for both). */
async function prime(s: Subject): Promise<void> {
  const p = await spawnProvider({ turns: TASK_TURNS, apiKey: API_KEY });
  const sv = s.serve(capsule(s, p.url), false);
  try {
    const client = new TaskClient(await sv.url);
    await client.task(0);
    client.close();
  } finally {
    await stopAll(sv, p);
  }
  s.script();
}

function report(arms: Subject[], figs: Map<string, Fig[]>, header: string): void {
  const rows: [string, string, string?][] = [];
  const metric = (label: string, pick: (f: Fig) => number, fmt: (v: number) => string): void => {
    rows.push(
      ...pairedRows(
        summarize(
          arms.map((a) => `${label}, ${a.name}`),
          arms.map((a) => figs.get(a.name)!.map(pick)),
        ),
        fmt,
      ),
    );
  };
  metric(`time per task, ${TASKS} tasks, ${SENDERS} senders (client)`, (f) => f.perTask, fmtTime);
  metric(`time per task, ${TASKS} tasks, ${SENDERS} senders (trace task_end spacing)`, (f) => f.spacing, fmtTime);
  metric('throughput (client)', (f) => 1000 / f.perTask, fmtRate('tasks/s'));
  // What a task costs the node's CPUs, whichever thread spends it: under load (--load), the time
  // per task follows this more than the quiet figure, which a second thread's parallel work hides.
  metric(`CPU per task over the ${TASKS} tasks (process tree, user + system)`, (f) => f.cpuPerTask, fmtTime);
  if (STEADY) {
    metric(`steady: time per task, ${TASKS} tasks after ${STEADY} more, run after the readings below (client)`, (f) => f.steady!.perTask, fmtTime);
    metric(`steady: time per task (trace task_end spacing)`, (f) => f.steady!.spacing, fmtTime);
    metric(`steady: CPU per task (process tree, user + system)`, (f) => f.steady!.cpuPerTask, fmtTime);
  }
  IDLE_MS.forEach((ms, i) => {
    metric(`RSS ${ms / 1000} s after one task`, (f) => f.afterOne[i]!.rss, fmtMiB);
    metric(`private ${ms / 1000} s after one task`, (f) => f.afterOne[i]!.priv, fmtMiB);
    metric(`anonymous ${ms / 1000} s after one task (no file pages)`, (f) => f.afterOne[i]!.anon, fmtMiB);
  });
  IDLE_MS.forEach((ms, i) => {
    metric(`RSS ${ms / 1000} s after the last of ${TASKS + 2} tasks`, (f) => f.afterLast[i]!.rss, fmtMiB);
    metric(`private ${ms / 1000} s after the last of ${TASKS + 2} tasks`, (f) => f.afterLast[i]!.priv, fmtMiB);
    metric(`anonymous ${ms / 1000} s after the last of ${TASKS + 2} tasks`, (f) => f.afterLast[i]!.anon, fmtMiB);
  });
  if (EXTRA_TURN) {
    metric(`time per task, one tool turn, after the readings (client)`, (f) => f.turns!.one, fmtTime);
    metric(`time per task, two tool turns (client)`, (f) => f.turns!.two, fmtTime);
    metric('each extra tool turn (two − one)', (f) => f.turns!.two - f.turns!.one, fmtTime);
  }
  metric('peak RSS over the run, sampled every 20 ms', (f) => f.peak, fmtMiB);
  metric('VmHWM summed over the tree at the end', (f) => f.hwm, fmtMiB);
  metric('a task after 45 s idle, send → completed', (f) => f.afterIdle, fmtTime);
  metric('script capsule end to end (mur run), wall', (f) => f.script.wall, fmtTime);
  metric('script capsule end to end (mur run), max RSS', (f) => f.script.hwm, fmtMiB);
  metric('process start → agent card URL', (f) => f.ready, fmtTime);
  metric('process start → first task completed', (f) => f.firstTask, fmtTime);
  metric('first run ever: start → first task, wall', (f) => f.cold.wall, fmtTime);
  metric('first run ever: CPU', (f) => f.cold.cpuMs, fmtTime);
  metric('first run ever: max RSS', (f) => f.cold.hwm, fmtMiB);
  metric('first run ever: peak RSS of the process tree, sampled every 20 ms', (f) => f.cold.peak, fmtMiB);
  metric('first run ever: peak anonymous RSS of the tree (no file pages), sampled every 20 ms', (f) => f.cold.peakAnon, fmtMiB);
  console.log(header);
  console.log(table(rows));
  // Medians by thread name of the throughput run's CPU per task (a name missing in a round counts 0).
  for (const a of arms) {
    const fs = figs.get(a.name)!;
    const names = new Set(fs.flatMap((f) => [...f.threadCpu.keys()]));
    const med = new Map([...names].map((n) => [n, spread(fs.map((f) => f.threadCpu.get(n) ?? 0)).median]));
    console.log(`CPU per task of the ${TASKS} tasks by thread, ${a.name}: ${threadLine(med)}`);
  }
  console.log(machineLine());
}

async function main(): Promise<void> {
  const img = OURS_KINDS.includes('image') ? imageRoot() : undefined;
  const subjects = [
    ...OURS_KINDS.flatMap((k) => [ours(k, REF_FIX!, img), ...FLAG_ARMS.map((v) => ours(k, REF_FIX!, img, v))]),
    ...(OURS_ONLY ? [] : [reference(REF_BIN!, REF_FIX!)]),
  ];
  for (const s of subjects) await prime(s);
  // The reference is the baseline: ratios read ours / reference.
  const arms = [...subjects].reverse();
  const figs = await withBenchLoad(LOAD, LOAD_AS, (bench) =>
    pairedRecords(
      arms.map((s) => ({ name: s.name, run: () => round(s, bench) })),
      ROUNDS,
    ),
  );
  const ourArms = [
    img ? `ours (image) = the runtime image's files in a chroot (node ${img.nodeVersion}, its ENV and ENTRYPOINT)` : '',
    OURS_KINDS.includes('dist') ? `ours = dist/ on node ${process.version} with the image's node flags` : '',
    ...FLAG_ARMS.map((v) => `ours … ${v.name} = the same with ${v.nodeFlags.join(' ')} after the image's flags`),
  ]
    .filter(Boolean)
    .join('; ');
  report(
    arms,
    figs,
    `reference runtime side by side: the reference's own driver-anthropic + echo-tool (+ capsule-allowlisted script) components in every arm, scripted provider over HTTP in its own process, no hooks; throughput and steady windows of ${WINDOW.label}; one client for all arms (non-blocking message/send, one tasks/get poller every 10 ms); mur serve without /metrics; ${ourArms}; ${ROUNDS} rounds${LOAD ? `; ${LOAD} spinning processes beside each arm during its throughput and extra-turn runs${layoutNote(LOAD_AS)}` : ''}`,
  );
}

await main();
process.exit(0);
