/**
 * How a serving process warms up, window by window, against the reference runtime: after its start
 * and one task, `--windows` (6) windows of `--tasks` (100) tasks each from `--senders` (8) senders
 * through the one client of bench/reference.ts (task-poller.ts: non-blocking `message/send`, one
 * `tasks/get` poller every 10 ms), the same scripted provider in a process of its own, the same
 * reference components and capsule (reference-arms.ts). Per window and arm:
 * - time per task (the client's wall / tasks), and beside it the spacing of the window's `task_end`
 *   events in the runtime's own trace ((last − first) / (tasks − 1)), which no client affects;
 * - the same trace split by phase (trace-phases.ts): the mean time from a task's start to its first
 *   turn's answer, to its tool's, to the next turn's, to its end, and from its end to the next
 *   task's start — where a window's excess sits, on either side;
 * - CPU per task of the process tree, and by thread name (proc-tree.ts `treeThreads`: the main
 *   thread, the component thread `WorkerThread`, V8's compiler and GC helpers `V8Worker`, the
 *   reference's `tokio-rt-worker`);
 * - `tasks/get` per task: the poller's requests over the window's tasks (a slower task is polled
 *   more, and each poll costs the server CPU);
 * - context switches per task (proc-tree.ts `treeSwitches`): voluntary ones are a thread going to
 *   sleep and being woken, which on a busy node waits for a core; involuntary ones a thread taken
 *   off its core while it could run on.
 *
 * Why this bench beside reference.ts: its first window (the first hundred tasks after a start)
 * reads a JIT still warming and its steady window a warm one; this one shows the whole curve and
 * where the CPU goes on the way, for screening a V8 option or a change (`--arm`) against today's
 * image and the reference in the same alternating rounds. The start, memory and script rows are
 * reference.ts's.
 *
 *   node --import tsx bench/warmup.ts [--rounds 2] [--windows 6] [--tasks 100] [--senders 8] [--load N]
 *     [--load-as processes|pods] [--ours image|dist] [--ours-only] [--one-turn] [--interleave B] [--idle S] [--arm 'name=<node flags> <VAR=value> …' …]
 *
 * --one-turn: the windows' tasks are one instant provider turn each (the answer alone) instead of a
 * tool turn and the answer (reference-arms.ts `windowTurns`).
 * --load N: N spinning processes (cpu-load.ts) beside each arm during its windows; --load-as pods
 * puts them in a cgroup of their own and the serving process tree in another, as kubelet lays out
 * two pods (cpu-load.ts; needs root and the cpu controller), instead of all in the bench's own.
 * --interleave B: every arm's serving process alive at once in a round, each window's tasks sent in
 * batches of B taking turns between the arms (interleave.ts: this machine's speed moves within
 * seconds, and arms a round apart catch different speeds); time and CPU per task are then the
 * window's batches summed, the trace spacing and the gap between tasks within batches. Not with --load.
 * --idle S: each serving process idles S seconds after its first task, before the windows: with S
 * over 30 the first window follows an idle release (runtime/memory.ts), as reference.ts's does.
 * --arm: one more arm of ours (reference-arms.ts `flagArms`). Needs MURMUR_REFERENCE_BIN and
 * MURMUR_REFERENCE_FIXTURES as reference.ts does.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmp } from '../test/loop/kit.ts';
import { layoutNote, loadAsArg, withBenchLoad, type BenchLoad, type CpuLoad } from './cpu-load.ts';
import { imageRoot } from './image-root.ts';
import { choiceArg, countArg, fmtTime, machineLine, numArg, pairedRecords, pairedRows, spread, summarize, table } from './paired.ts';
import { batchPhases, batchSpacing, schedule, type Batch } from './interleave.ts';
import { threadCpuPer, threadLine, treeStat, treeSwitches, treeThreads } from './proc-tree.ts';
import { spawnProvider } from './provider-process.ts';
import { API_KEY, TASK_TURNS, agentYaml, flagArms, ours, reference, referenceInputs, endsOf, windowTurns, type Subject } from './reference-arms.ts';
import { TaskClient } from './task-poller.ts';
import { phaseMeans, traceTasks } from './trace-phases.ts';

const ROUNDS = numArg('rounds', 2);
const WINDOWS = numArg('windows', 6);
const TASKS = numArg('tasks', 100);
const SENDERS = numArg('senders', 8);
const LOAD = countArg('load', 0);
const LOAD_AS = loadAsArg();
const OURS_ONLY = process.argv.includes('--ours-only');
const KIND = choiceArg('ours', ['image', 'dist'] as const, 'image');
const ARMS = flagArms('arm');
/** --interleave B: all arms alive at once, each window in batches of B tasks taking turns (interleave.ts); 0: one arm after another. */
const INTERLEAVE = countArg('interleave', 0);
/** --idle S: seconds each serving process idles after its first task, before the windows (0: none). */
const IDLE_S = countArg('idle', 0);
if (INTERLEAVE && LOAD) {
  console.error('--interleave with --load: not both (each arm would start its own spinners beside the others); run them apart');
  process.exit(2);
}
/** --one-turn: the windows' tasks are one instant provider turn each (reference-arms.ts `windowTurns`). */
const WINDOW = windowTurns();
const { bin, fixtures } = referenceInputs('warmup bench', OURS_ONLY);

/** One window of one arm in one round. */
interface WindowFig {
  perTask: number;
  /** The window's `task_end` spacing in the runtime's trace (ms); NaN when the trace has too few. */
  spacing: number;
  cpuPerTask: number;
  threads: Map<string, number>;
  voluntary: number;
  involuntary: number;
  polls: number;
  /** Mean duration of each phase of the window's tasks in the runtime's trace (trace-phases.ts). */
  phases: Map<string, number>;
}

/** A window's figures as its batches add up (one batch a window unless --interleave). */
type Acc = Omit<WindowFig, 'spacing' | 'phases'> & { batches: Batch[] };

/** One arm's serving process in a round, with its provider and client. */
interface Live {
  s: Subject;
  sv: ReturnType<Subject['serve']>;
  provider: { stop(): Promise<void> };
  client?: TaskClient;
  spin?: CpuLoad;
  windows: Acc[];
  stopped?: boolean;
}

/** Serves the capsule and runs one task (task 0). */
async function start(s: Subject): Promise<Live> {
  const provider = await spawnProvider({ turns: [...TASK_TURNS, ...Array.from({ length: WINDOWS * TASKS }, () => WINDOW.turns).flat()], apiKey: API_KEY });
  const dir = tmp(`warmup-${s.name.replace(/\W+/g, '-')}-capsule-`);
  writeFileSync(join(dir, 'murmur.yaml'), agentYaml(provider.url, TASKS + SENDERS));
  const l: Live = { s, sv: s.serve(dir, false), provider, windows: [] };
  try {
    l.client = new TaskClient(await l.sv.url);
    await l.client.task(0);
    return l;
  } catch (e) {
    await stop(l);
    throw e;
  }
}

/** Runs one batch of `l`'s tasks and adds what it cost to its window. */
async function batch(l: Live, b: Batch): Promise<void> {
  const pid = l.sv.proc.pid!;
  const client = l.client!;
  const threads0 = treeThreads(pid);
  const cpu0 = treeStat(pid).cpuMs;
  const sw0 = treeSwitches(pid);
  const gets0 = client.sent.get('tasks/get') ?? 0;
  const t0 = performance.now();
  await client.run(b.from, b.n, SENDERS);
  const wall = performance.now() - t0;
  const sw1 = treeSwitches(pid);
  const per = (x: number) => x / TASKS;
  const w = (l.windows[b.window] ??= { perTask: 0, cpuPerTask: 0, threads: new Map(), voluntary: 0, involuntary: 0, polls: 0, batches: [] });
  w.perTask += per(wall);
  w.cpuPerTask += per(treeStat(pid).cpuMs - cpu0);
  for (const [k, v] of threadCpuPer(threads0, treeThreads(pid), TASKS)) w.threads.set(k, (w.threads.get(k) ?? 0) + v);
  w.voluntary += per(sw1.voluntary - sw0.voluntary);
  w.involuntary += per(sw1.involuntary - sw0.involuntary);
  w.polls += per((client.sent.get('tasks/get') ?? 0) - gets0);
  w.batches.push(b);
}

/** Stops what `start` started; never throws. */
async function stop(l: Live): Promise<void> {
  if (l.stopped) return;
  l.stopped = true;
  l.client?.close();
  await l.spin?.stop().catch(() => undefined);
  await l.sv.stop().catch(() => undefined);
  await l.provider.stop().catch(() => undefined);
}

/** Stops the arm, then reads its trace: each window's task_end spacing and phases (interleave.ts). */
async function finish(l: Live): Promise<WindowFig[]> {
  await stop(l);
  // Task i's trace events are tasks[i] (tasks run one at a time).
  const tasks = traceTasks(l.sv.workdir);
  const ends = endsOf(tasks);
  if (ends.length < 1 + WINDOWS * TASKS)
    console.warn(`${l.s.name}: ${ends.length} task_end events under ${l.sv.workdir}, expected ${1 + WINDOWS * TASKS}: no trace spacing`);
  return l.windows.map(({ batches, ...f }, w) => {
    // One batch a window: the gap to the next window's first task counts, as it always has.
    const phases = batches.length === 1 ? phaseMeans(tasks.slice(1 + w * TASKS, 1 + (w + 1) * TASKS), tasks[1 + (w + 1) * TASKS]) : batchPhases(tasks, batches);
    return { ...f, spacing: batchSpacing(ends, batches), phases };
  });
}

/** The --idle period: what a process does after it (the idle release, a new component thread) is what the first window then pays. */
async function idle(): Promise<void> {
  if (IDLE_S) await new Promise((r) => setTimeout(r, IDLE_S * 1000));
}

/**
 * One round of `arms` together: each serving process started (one task), the --idle period, the
 * load beside each (the idle period stays idle), then their windows — with one arm its windows
 * whole, with several (--interleave) in batches taking turns (interleave.ts `schedule`) — and each
 * arm's figures once all are stopped.
 */
async function round(arms: Subject[], load: BenchLoad, r: number): Promise<Map<string, WindowFig[]>> {
  const live: Live[] = [];
  try {
    for (const s of arms) live.push(await start(s));
    await idle();
    for (const l of live) l.spin = await load.start(l.sv.proc.pid!);
    for (const b of schedule(live.length, WINDOWS, TASKS, INTERLEAVE || TASKS, r)) await batch(live[b.arm]!, b);
    const out = new Map<string, WindowFig[]>();
    for (const l of live) out.set(l.s.name, await finish(l));
    return out;
  } finally {
    for (const l of live) await stop(l);
  }
}

/**
 * Every round: the arms one after another, alternating as every paired bench does (paired.ts
 * `pairedRecords`), or with --interleave all at once, their start order reversing every other round.
 */
async function rounds(subjects: Subject[], load: BenchLoad): Promise<Map<string, WindowFig[][]>> {
  if (!INTERLEAVE)
    return pairedRecords(
      subjects.map((s) => ({ name: s.name, run: async (r: number) => (await round([s], load, r)).get(s.name)! })),
      ROUNDS,
    );
  const figs = new Map<string, WindowFig[][]>(subjects.map((x) => [x.name, []]));
  for (let r = 0; r < ROUNDS; r++) for (const [name, f] of await round(r % 2 ? [...subjects].reverse() : subjects, load, r)) figs.get(name)!.push(f);
  return figs;
}

/**
 * Window `w`'s rows: each figure paired by round, the first arm (the reference) the baseline; with
 * `--arm` variants, time and CPU per task are paired against today's image (`ours`) too.
 */
function windowReport(arms: Subject[], ours: Subject, figs: Map<string, WindowFig[][]>, w: number): string {
  const first = 2 + w * TASKS;
  const rows: [string, string, string?][] = [];
  const variants = arms.slice(arms.indexOf(ours) + 1);
  const metric = (label: string, pick: (f: WindowFig) => number, fmt: (v: number) => string, againstOurs = false): void => {
    const pairOf = (set: Subject[]) =>
      summarize(
        set.map((a) => `${label}, ${a.name}`),
        set.map((a) => figs.get(a.name)!.map((r) => pick(r[w]!))),
      );
    rows.push(...pairedRows(pairOf(arms), fmt));
    if (againstOurs && variants.length && arms[0] !== ours) rows.push(...pairedRows(pairOf([ours, ...variants]), fmt).slice(variants.length + 1));
  };
  metric('time per task', (f) => f.perTask, fmtTime, true);
  metric('time per task (trace task_end spacing)', (f) => f.spacing, fmtTime);
  // The phases of the first arm's first round name the rows; both runtimes' traces give the same.
  for (const phase of figs.get(arms[0]!.name)![0]![w]!.phases.keys()) metric(`trace ${phase}`, (f) => f.phases.get(phase) ?? NaN, fmtTime);
  metric('CPU per task', (f) => f.cpuPerTask, fmtTime, true);
  metric(
    'tasks/get per task',
    (f) => f.polls,
    (v) => v.toFixed(1),
  );
  metric(
    'voluntary context switches per task',
    (f) => f.voluntary,
    (v) => v.toFixed(1),
  );
  metric(
    'involuntary context switches per task',
    (f) => f.involuntary,
    (v) => v.toFixed(1),
  );
  const byThread = arms.map((a) => {
    const rs = figs.get(a.name)!.map((r) => r[w]!.threads);
    const names = new Set(rs.flatMap((m) => [...m.keys()]));
    const med = new Map([...names].map((n) => [n, spread(rs.map((m) => m.get(n) ?? 0)).median]));
    return `  CPU per task by thread, ${a.name}: ${threadLine(med)}`;
  });
  return [`window ${w + 1}: tasks ${first}–${first + TASKS - 1} after the start${IDLE_S ? ` and ${IDLE_S} s idle` : ''}`, table(rows), ...byThread].join('\n');
}

async function main(): Promise<void> {
  const img = KIND === 'image' ? imageRoot() : undefined;
  const today = ours(KIND, fixtures, img);
  const subjects = [...(OURS_ONLY ? [] : [reference(bin, fixtures)]), today, ...ARMS.map((v) => ours(KIND, fixtures, img, v))];
  const figs = await withBenchLoad(LOAD, LOAD_AS, (load) => rounds(subjects, load));
  console.log(
    `warm-up window by window: ${subjects.map((s) => s.name).join(', ')}; the reference's own driver-anthropic + echo-tool, ${WINDOW.label}, scripted provider in its own process; one client (non-blocking message/send, one tasks/get poller every 10 ms), ${SENDERS} senders; ${ROUNDS} rounds${IDLE_S ? `; ${IDLE_S} s idle after the first task` : ''}${INTERLEAVE ? `, the arms alive at once, each window in batches of ${INTERLEAVE} tasks taking turns` : ''}${LOAD ? `; ${LOAD} spinning processes beside each arm during its windows${layoutNote(LOAD_AS)}` : ''}${ARMS.map((a) => `; ${a.name} = ${[...a.nodeFlags, ...Object.entries(a.env).map(([k, v]) => `${k}=${v}`)].join(' ')}`).join('')}`,
  );
  for (let w = 0; w < WINDOWS; w++) console.log(windowReport(subjects, today, figs, w));
  console.log(machineLine());
}

await main();
process.exit(0);
