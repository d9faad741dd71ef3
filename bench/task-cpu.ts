/**
 * The serving process's CPU per task: what `mur serve` itself spends on one task, in user + system
 * time from /proc, which a loaded shared machine moves far less than wall time. The whole process
 * (all threads) and its main thread apart (/proc/<pid>/task/<pid>/stat), over a batch of one-turn
 * tasks (the scripted provider answers text at once) from 8 senders through the fair client
 * (task-poller.ts: non-blocking send, one `tasks/get` poller), after a warm-up batch.
 *
 * The subject is each `--arm name=<checkout>`'s compiled dist/ (`npm run build` in it first; a
 * `git worktree` of another commit compares commits), run as the image runs it (its ENTRYPOINT node
 * flags and malloc ENV, serving.ts `imageProcess`) with the built-in C anthropic driver and the echo
 * tool, queue acceptance, the SQLite store. The arms alternate round by round; the report is
 * min / median / max per arm and the paired ratio against the first arm. The provider runs in its
 * own process (provider-process.ts) for the whole bench.
 *
 * `--prof <dir>`: each serving process runs with `--cpu-prof` into <dir>/<arm>-<round>/, and the
 * bench prints the main thread's samples during the measured batch by module (self time) and the
 * heaviest functions (cpu-profile-summary.ts).
 *
 * `--gc`: each serving process runs with `--trace-gc-nvp`, and the bench adds, per task during the
 * measured batch, what the main thread and the worker threads (the component thread, mostly)
 * allocated, their scavenges and their GC pauses (gc-trace.ts). The tracing itself costs a little
 * CPU: compare CPU figures of runs without it.
 *
 *   npm run bench task-cpu    (this checkout's dist/ alone)
 *   node --import tsx bench/task-cpu.ts --arm base=/tmp/wt-base --arm head=. ['--arm semi2=. --max-semi-space-size=2'] [--rounds 5] [--tasks 400] [--warmup 40] [--senders 8] [--client poller|blocking] [--answer-chars 4] [--prof <dir>] [--gc]
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import http from 'node:http';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { API_KEY, tmp } from '../test/loop/kit.ts';
import { sendTask, serve } from './serving.ts';
import { providerEnv, stackCapsule } from './serving-stack.ts';
import { spawnProvider } from './provider-process.ts';
import { TaskClient } from './task-poller.ts';
import { choiceArg, fmtTime, machineLine, paired, pairedRows, table, numArg } from './paired.ts';
import { summarizeProfile } from './cpu-profile-summary.ts';
import { GcTrace, type GcWindow } from './gc-trace.ts';
import { statCpuMs, threadCpuPer, treeThreads } from './proc-tree.ts';

const ROUNDS = numArg('rounds', 5);
const TASKS = numArg('tasks', 400);
const WARMUP = numArg('warmup', 40);
const SENDERS = numArg('senders', 8);
/**
 * `poller`: the fair client of bench/reference.ts (non-blocking send, one `tasks/get` sweeper), whose
 * `tasks/get` per task vary with how long tasks wait (3–7 here), and their CPU with them.
 * `blocking`: one blocking `message/send` per task and nothing else, so every round does the same
 * requests: the figure to compare commits by.
 */
const CLIENT = choiceArg('client', ['poller', 'blocking'] as const, 'poller');
/** The answer's length in characters: the provider streams it in 12-character deltas, each a chunk the driver emits. */
const ANSWER_CHARS = numArg('answer-chars', 4);
const PROF = (() => {
  const i = process.argv.indexOf('--prof');
  return i > 0 ? resolve(process.argv[i + 1]!) : undefined;
})();
const GC = process.argv.includes('--gc');
/**
 * `--arm 'name=<checkout> [<node flag> …]'`: the flags go after the image's (`--max-semi-space-size=2`
 * against the image's 1, say), so one checkout can be measured under several.
 */
const ARMS = process.argv
  .flatMap((a, i) => (process.argv[i - 1] === '--arm' ? [a] : []))
  .map((a) => {
    const [arm = '', ...flags] = a.trim().split(/\s+/);
    const eq = arm.indexOf('=');
    const name = arm.slice(0, Math.max(eq, 0));
    const root = eq > 0 ? arm.slice(eq + 1) : '';
    if (!name || !root || flags.some((f) => !f.startsWith('--'))) throw new Error(`--arm ${a}: expected 'name=<checkout> [--node-flag …]'`);
    return { name, root: resolve(root), flags };
  });
// Without --arm: this checkout's dist/.
if (!ARMS.length) ARMS.push({ name: 'this checkout', root: PROJECT_ROOT, flags: [] });

function cpuMs(pid: number): { all: number; main: number } {
  return { all: statCpuMs(`/proc/${pid}/stat`), main: statCpuMs(`/proc/${pid}/task/${pid}/stat`) };
}

async function main(): Promise<void> {
  const stack = await stackCapsule('task-cpu', { echo: true, queueDepth: SENDERS * 2 });
  const cache = tmp('task-cpu-cache-');
  const provider = await spawnProvider({
    turns: [{ text: ANSWER_CHARS === 4 ? 'done' : 'word '.repeat(Math.ceil(ANSWER_CHARS / 5)).slice(0, ANSWER_CHARS) }],
    apiKey: API_KEY,
    onExhausted: 'repeat-last',
  });
  const figs = new Map<string, { all: number[]; main: number[]; wall: number[]; threads: Map<string, number>[]; gc: GcWindow[] }>();

  const round = async (arm: { name: string; root: string; flags: string[] }, r: number): Promise<number> => {
    const profDir = PROF && join(PROF, `${arm.name}-${r}`);
    if (profDir) mkdirSync(profDir, { recursive: true });
    const served = serve('dist', stack.capsule, stack.registry, providerEnv(provider.url, cache), [], {
      asImage: true,
      root: arm.root,
      nodeFlags: [...arm.flags, ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(GC ? ['--trace-gc-nvp'] : [])],
    });
    const proc = served.proc;
    const gc = GC ? new GcTrace(proc.stdout!) : undefined;
    const url = await served.url.catch((e: Error) => {
      throw new Error(`${arm.name}: ${e.message}`);
    });
    const client = new TaskClient(url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: SENDERS });
    const run = async (from: number, count: number): Promise<void> => {
      if (CLIENT === 'poller') return client.run(from, count, SENDERS);
      let next = from;
      await Promise.all(
        Array.from({ length: SENDERS }, async () => {
          while (next < from + count) await sendTask(url, next++, agent);
        }),
      );
    };
    await run(0, WARMUP);
    const gets0 = client.sent.get('tasks/get') ?? 0;
    const before = cpuMs(proc.pid!);
    const tb = treeThreads(proc.pid!);
    gc?.start();
    const t0 = process.hrtime.bigint();
    await run(WARMUP, TASKS);
    const t1 = process.hrtime.bigint();
    const gcWindow = gc?.stop();
    const after = cpuMs(proc.pid!);
    const ta = treeThreads(proc.pid!);
    const gets = ((client.sent.get('tasks/get') ?? 0) - gets0) / TASKS;
    client.close();
    agent.destroy();
    await served.stop();
    const per = threadCpuPer(tb, ta, TASKS);
    const f = figs.get(arm.name) ?? { all: [], main: [], wall: [], threads: [], gc: [] };
    if (gcWindow) f.gc.push(gcWindow);
    f.wall.push(Number(t1 - t0) / 1e6 / TASKS);
    f.all.push((after.all - before.all) / TASKS);
    f.main.push((after.main - before.main) / TASKS);
    f.threads.push(per);
    figs.set(arm.name, f);
    if (profDir) {
      // CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile: the main thread is tid 0.
      const file = readdirSync(profDir).find((n) => n.endsWith('.cpuprofile') && n.split('.')[4] === '0');
      if (file) writeFileSync(join(profDir, 'window.json'), JSON.stringify({ file, fromUs: Number(t0 / 1000n), toUs: Number(t1 / 1000n) }));
    }
    console.error(
      `${arm.name} round ${r}: ${f.all.at(-1)!.toFixed(2)} ms/task all threads, ${f.main.at(-1)!.toFixed(2)} main, ${gets.toFixed(2)} tasks/get a task`,
    );
    return f.all.at(-1)!;
  };

  // Untimed: the first start of a component prepares its capped module into the cache (≈ 100 ms for
  // a JavaScript-engine tool, host/instance.ts preparedModule), which no later round pays.
  await round(ARMS[0]!, -1);
  figs.clear();
  if (PROF) rmSync(join(PROF, `${ARMS[0]!.name}--1`), { recursive: true, force: true });
  await paired(
    ARMS.map((a) => ({ name: a.name, run: (r: number) => round(a, r) })),
    ROUNDS,
  );
  await provider.stop();

  const rows: [string, string, string?][] = [];
  const summary = (label: string, pick: (f: { all: number[]; main: number[]; wall: number[]; gc: GcWindow[] }) => number[], fmt = fmtTime): void => {
    const names = ARMS.map((a) => `${label}, ${a.name}`);
    const samples = ARMS.map((a) => pick(figs.get(a.name)!));
    const spreadOf = (xs: number[]) => {
      const s = [...xs].sort((x, y) => x - y);
      const m = s.length >> 1;
      return { min: s[0]!, median: s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2, max: s.at(-1)! };
    };
    rows.push(
      ...pairedRows(
        {
          arms: names.map((name, i) => ({ name, samples: samples[i]!, spread: spreadOf(samples[i]!) })),
          ratios: names.slice(1).map((name, i) => {
            const rs = samples[i + 1]!.map((v, k) => v / samples[0]![k]!);
            return { name, samples: rs, spread: spreadOf(rs) };
          }),
        },
        fmt,
      ),
    );
  };
  summary('CPU per task, all threads', (f) => f.all);
  summary('CPU per task, main thread', (f) => f.main);
  // Wall time per task (the batch's wall / tasks) moves with everything else the machine runs: the
  // paired ratio only, and only beside the CPU figures.
  summary('wall time per task', (f) => f.wall);
  if (GC) {
    const kib = (b: number): string => `${(b / 1024).toFixed(1)} KiB`;
    const count = (n: number): string => n.toFixed(3);
    summary('allocated per task, main thread', (f) => f.gc.map((g) => g.main.allocatedBytes / TASKS), kib);
    summary('allocated per task, worker threads', (f) => f.gc.map((g) => g.workers.allocatedBytes / TASKS), kib);
    summary('scavenges per task, main thread', (f) => f.gc.map((g) => g.main.scavenges / TASKS), count);
    summary('scavenges per task, worker threads', (f) => f.gc.map((g) => g.workers.scavenges / TASKS), count);
    summary('full GCs per task, main thread', (f) => f.gc.map((g) => g.main.full / TASKS), count);
    summary('GC pause per task, main thread', (f) => f.gc.map((g) => g.main.pauseMs / TASKS));
    summary('GC pause per task, worker threads', (f) => f.gc.map((g) => g.workers.pauseMs / TASKS));
  }
  console.log(
    `mur serve CPU per task (user + system): ${TASKS} one-turn tasks (a ${ANSWER_CHARS}-character answer) after ${WARMUP}, ${SENDERS} senders, ${CLIENT} client, ${ROUNDS} rounds`,
  );
  console.log(table(rows));
  for (const a of ARMS) {
    const names = new Set(figs.get(a.name)!.threads.flatMap((m) => [...m.keys()]));
    const med = [...names].map((n) => {
      const xs = figs
        .get(a.name)!
        .threads.map((m) => m.get(n) ?? 0)
        .sort((x, y) => x - y);
      return `${n} ${xs[xs.length >> 1]!.toFixed(2)}`;
    });
    console.log(`${a.name}, median ms per task by thread name: ${med.join(', ')}`);
  }
  console.log(machineLine());
  if (PROF) {
    for (const d of readdirSync(PROF)) {
      const w = JSON.parse(readFileSync(join(PROF, d, 'window.json'), 'utf8')) as { file: string; fromUs: number; toUs: number };
      console.log(`\n${d}: main thread during the batch, per task\n${summarizeProfile(join(PROF, d, w.file), w.fromUs, w.toUs, TASKS)}`);
    }
  }
}

await main();
process.exit(0);
