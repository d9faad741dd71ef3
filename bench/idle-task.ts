/**
 * The task after an idle period, and a serving process's memory around it, with the built-in
 * Anthropic driver (components/driver-anthropic, C) and the reference runtime's Rust echo-tool
 * (MURMUR_REFERENCE_FIXTURES, as bench/reference.ts): what a pod running the runtime image pays
 * when a task comes after 45 s without one, and what it holds meanwhile.
 *
 * Each arm is `mur serve` as the image runs it (its Node, /app, ENV and ENTRYPOINT in a chroot,
 * image-root.ts; `--ours dist` for dist/ on this machine's node with the image's flags), with the
 * arm's environment laid over (`--arm NAME:VAR=V,VAR=V`, repeatable; `base` with none is always
 * first and is the baseline of the ratios; `ROOT=<dir>` runs another unpacked image, e.g. a copy
 * of the one before a change). Arms alternate round by round (paired.ts).
 *
 * Private memory is what a node gets back when the process ends, on a node that runs other capsules
 * of the same image: the image's node binary and libraries, mapped by each of them, are shared
 * there. So beside the arms runs one companion per image root, idle after one task, for the
 * whole bench: the pages it touched too count as shared, not private (alone, a process's private
 * memory is its RSS: nothing else maps the image's files). Per round:
 * - a first task, then `--warm` (5) tasks one after another: the warm task's time is their median;
 * - `--idle` (45) seconds without a call, /proc/<pid>/smaps_rollup read every second: private
 *   memory (Private_Clean + Private_Dirty) 1 s after the task and at most over the first 30 s, and
 *   RSS/private at the end; the same of anonymous memory (smaps_rollup's Anonymous: the process's
 *   own, no file's pages: a file's pages count as private whenever no other process maps them,
 *   though they stay in the page cache when the process ends);
 * - the task after the idle period, then `--warm` warm tasks again, a second idle period and task;
 * - 100 tasks from 8 senders (bench/task-poller.ts): their wall time per task (throughput, the
 *   row V8 flags that trade speed for memory move), the peak RSS and the peak private memory
 *   over the burst, sampled every 20 ms.
 * Every process of an image gets the same component cache (MURMUR_COMPONENT_CACHE, filled by a
 * first start that then goes): no start here transpiles, as none does in a pod whose image seeds
 * the cache.
 * Every task but the burst's is one blocking `message/send` (one connection, keep-alive): the
 * client's time is send → completed answer, with no poller's 10 ms grain. Each task is two provider
 * turns (a tool_use of echo-tool, then the answer). The trace's events (same clock) split a task:
 * send → task_start (HTTP, A2A, the store), each inference and tool call (their duration_ms:
 * the driver's or tool's instance started first when there is none), task_end → answer.
 *
 *   MURMUR_REFERENCE_FIXTURES=<murmur>/crates/murmur-cli/tests/fixtures \
 *   node --import tsx bench/idle-task.ts [--rounds 3] [--idle 45] [--warm 5] [--ours image|dist] \
 *     [--arm keep-thread:MURMUR_COMPONENT_IDLE_MS=0] ...
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { publish } from '../runtime/registry/registry.ts';
import { fixture } from '../test/fixtures/build.ts';
import { tmp } from '../test/loop/kit.ts';
import { imageRoot, rootAt, type ImageRoot } from './image-root.ts';
import { choiceArg, fmtMiB, fmtTime, machineLine, pairedRows, summarize, table, numArg, pairedRecords } from './paired.ts';
import { spawnServer, treeMemory, type Memory, type Served } from './proc-tree.ts';
import { spawnProvider } from './provider-process.ts';
import { API_KEY, COMPONENTS, TASK_TURNS } from './reference-arms.ts';
import { murCommand, sendTask } from './serving.ts';
import { TaskClient } from './task-poller.ts';

const ROUNDS = numArg('rounds', 3);
const IDLE_S = numArg('idle', 45);
const WARM = numArg('warm', 5);
const BURST = 100;
const SENDERS = 8;
const OURS = choiceArg('ours', ['image', 'dist'] as const, 'image');
const REF_FIX = process.env.MURMUR_REFERENCE_FIXTURES;

/**
 * `--arm NAME:VAR=V,VAR=V` (repeatable): an arm with that environment over the image's; an item
 * that starts with `--` is a node flag, put after the image's own (`--arm semi2:--max-semi-space-size=2`).
 */
function armsArg(): { name: string; env: Record<string, string>; flags: string[] }[] {
  const arms = [{ name: 'base', env: {} as Record<string, string>, flags: [] as string[] }];
  process.argv.forEach((a, i) => {
    if (a !== '--arm') return;
    const [name, vars = ''] = (process.argv[i + 1] ?? '').split(':', 2) as [string, string?];
    const env: Record<string, string> = {};
    const flags: string[] = [];
    for (const kv of vars.split(',').filter(Boolean)) {
      if (kv.startsWith('--')) {
        flags.push(kv);
        continue;
      }
      const eq = kv.indexOf('=');
      env[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
    arms.push({ name, env, flags });
  });
  return arms;
}

async function registry(): Promise<string> {
  const reg = tmp('idle-reg-');
  const drv = tmp('idle-drv-');
  writeFileSync(join(drv, 'murmur.yaml'), 'name: driver-anthropic\nversion: 0.1.0\nruntime: driver\ndescription: The built-in driver.\n');
  writeFileSync(join(drv, 'component.wasm'), readFileSync(await fixture('driver-anthropic')));
  publish(reg, drv);
  const tool = tmp('idle-tool-');
  writeFileSync(
    join(tool, 'murmur.yaml'),
    'name: echo-tool\nversion: 0.1.0\nruntime: tool\ndescription: Echoes its input.\ninput_schema:\n  type: object\n  properties:\n    data: {type: string}\n',
  );
  writeFileSync(join(tool, 'component.wasm'), readFileSync(join(REF_FIX!, COMPONENTS.tool)));
  publish(reg, tool);
  return reg;
}

function capsule(endpoint: string): string {
  const dir = tmp('idle-capsule-');
  writeFileSync(
    join(dir, 'murmur.yaml'),
    [
      'name: idle-agent',
      'version: 0.1.0',
      'artifacts:',
      '  - {name: echo-tool, version: 0.1.0, runtime: tool}',
      '  - {name: driver-anthropic, version: 0.1.0, runtime: driver}',
      'capabilities:',
      `  network: {allow: ['${endpoint}']}`,
      'inference:',
      '  driver: {artifact: driver-anthropic}',
      `  endpoint: ${endpoint}`,
      '  model: test-model',
      `  api_key: ${API_KEY}`,
      'lifecycle: {task_acceptance: queue, queue_depth: 16}',
      '',
    ].join('\n'),
  );
  return dir;
}

/** One task's parts (ms): client total, send → task_start, each inference, each tool call, task_end → answer. */
interface Split {
  total: number;
  toStart: number;
  inference: number[];
  tools: number[];
  toAnswer: number;
}

type Ev = { event_type: string; timestamp: number; duration_ms?: number };

function traceEvents(dir: string): Ev[] {
  const out: Ev[] = [];
  for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (!f.endsWith('trace.jsonl')) continue;
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line) out.push(JSON.parse(line) as Ev);
  }
  return out.sort((a, b) => a.timestamp - b.timestamp);
}

/** Splits the tasks sent at `sends` (Date.now() at send and at answer) by the trace's events, in order. */
function splits(events: Ev[], sends: { at: number; done: number }[]): Split[] {
  const tasks: Ev[][] = [];
  let cur: Ev[] | undefined;
  for (const e of events) {
    if (e.event_type === 'task_start') tasks.push((cur = []));
    cur?.push(e);
  }
  return sends.map((s, i) => {
    const t = tasks[i] ?? [];
    const start = t.find((e) => e.event_type === 'task_start')?.timestamp ?? NaN;
    const end = t.find((e) => e.event_type === 'task_end')?.timestamp ?? NaN;
    const dur = (type: string) => t.filter((e) => e.event_type === type).map((e) => e.duration_ms ?? NaN);
    return { total: s.done - s.at, toStart: start - s.at, inference: dur('inference'), tools: dur('tool_call'), toAnswer: s.done - end };
  });
}

interface Fig {
  warm: Split;
  idle: Split[];
  priv1: number;
  privMax30: number;
  /** The same readings of anonymous memory (proc-tree.ts: the process's own, no file's pages). */
  anon1: number;
  anonMax30: number;
  at45: Memory;
  peak: Memory;
  /** Wall time of the burst of BURST tasks from SENDERS senders (throughput under load). */
  burstMs: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function medianSplit(xs: Split[]): Split {
  return {
    total: median(xs.map((x) => x.total)),
    toStart: median(xs.map((x) => x.toStart)),
    inference: [0, 1].map((i) => median(xs.map((x) => x.inference[i] ?? NaN))),
    tools: [median(xs.map((x) => x.tools[0] ?? NaN))],
    toAnswer: median(xs.map((x) => x.toAnswer)),
  };
}

async function round(env: Record<string, string>, reg: string, img: ImageRoot | undefined, flags: string[] = []): Promise<Fig> {
  const tasks = 1 + 2 * (WARM + 1) + BURST;
  const p = await spawnProvider({ turns: Array.from({ length: tasks }, () => TASK_TURNS).flat(), apiKey: API_KEY });
  const workdir = tmp('idle-work-');
  const sv = serveIn(img, env, p.url, reg, workdir, flags);
  const pid = sv.proc.pid!;
  const url = await sv.url;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let n = 0;
  const sends: { at: number; done: number }[] = [];
  const one = async (): Promise<void> => {
    const at = Date.now();
    await sendTask(url, n++, agent);
    sends.push({ at, done: Date.now() });
  };
  const warmIdx: number[] = [];
  const idleIdx: number[] = [];
  let privMax30 = 0;
  let priv1 = 0;
  let anonMax30 = 0;
  let anon1 = 0;
  let at45: Memory = { rss: 0, priv: 0, anon: 0 };
  await one();
  for (let k = 0; k < 2; k++) {
    for (let w = 0; w < WARM; w++) {
      warmIdx.push(sends.length);
      await one();
    }
    const t0 = performance.now();
    for (let s = 1; s <= IDLE_S; s++) {
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + s * 1000 - performance.now())));
      const m = treeMemory(pid);
      if (s <= 30) privMax30 = Math.max(privMax30, m.priv);
      if (s <= 30) anonMax30 = Math.max(anonMax30, m.anon);
      if (s === 1 && k === 0) priv1 = m.priv;
      if (s === 1 && k === 0) anon1 = m.anon;
      at45 = m;
    }
    idleIdx.push(sends.length);
    await one();
  }
  agent.destroy();
  const client = new TaskClient(url);
  const peak: Memory = { rss: 0, priv: 0, anon: 0 };
  const sampler = setInterval(() => {
    const m = treeMemory(pid);
    peak.rss = Math.max(peak.rss, m.rss);
    peak.priv = Math.max(peak.priv, m.priv);
    peak.anon = Math.max(peak.anon, m.anon);
  }, 20);
  const burstT0 = performance.now();
  await client.run(n, BURST, SENDERS);
  const burstMs = performance.now() - burstT0;
  clearInterval(sampler);
  client.close();
  await sv.stop();
  await p.stop();
  const all = splits(traceEvents(workdir), sends);
  return { warm: medianSplit(warmIdx.map((i) => all[i]!)), idle: idleIdx.map((i) => all[i]!), priv1, privMax30, anon1, anonMax30, at45, peak, burstMs };
}

function serveIn(img: ImageRoot | undefined, env: Record<string, string>, endpoint: string, reg: string, workdir: string, nodeFlags: string[] = []): Served {
  const c = murCommand(
    ['serve', capsule(endpoint), '--a2a-port', '0', '--metrics-port', '0', '--registry', reg, '--workdir', workdir, '--quiet'],
    { HOME: tmp('idle-home-'), MURMUR_COMPONENT_CACHE: cacheOf(img), ...env },
    img ? { from: 'dist', image: img, nodeFlags } : { from: 'dist', asImage: true, nodeFlags },
  );
  return spawnServer(c.cmd, c.args, c.env, (out) => /serving \S+ \S+ at (http:\/\/\S+)/.exec(out)?.[1]);
}

const caches = new Map<ImageRoot | undefined, string>();
/** The component cache every process of one image shares (filled by the start before its companion's). */
function cacheOf(img: ImageRoot | undefined): string {
  let c = caches.get(img);
  if (!c) caches.set(img, (c = tmp('idle-cache-')));
  return c;
}

/**
 * The companion keeps what it mapped: its component thread and token tables are kept (0), so no
 * idle release comes to let the binary's pages go (runtime/native/exe.c). It stands for what
 * shares the image's node binary on a node and never lets go of it: the operator's and the
 * activator's processes (their images share the node:24 base layer; their code runs all the time).
 */
const COMPANION_ENV = { MURMUR_COMPONENT_IDLE_MS: '0', MURMUR_TOKEN_TABLES_IDLE_MS: '0' };

/**
 * An idle process of the image at `img` for the whole bench (see the header), after as many tasks
 * as a round's process has run when its memory is read (the first and `--warm`), so that the
 * binary's code those tasks run is mapped by both, as a warm peer on a node maps it (with one
 * task, 3.4 MiB of the binary's text was the measured process's alone; with these, 2.4).
 */
async function companion(img: ImageRoot | undefined, reg: string): Promise<() => Promise<void>> {
  const tasks = 1 + WARM;
  const p = await spawnProvider({ turns: Array.from({ length: tasks }, () => TASK_TURNS).flat(), apiKey: API_KEY });
  // A first start fills the image's component cache and goes; the companion then starts from the
  // filled cache, as every pod of the image does and as each round's process does. One that
  // transpiles lets the binary's pages go as it does (host/transpile-pages.ts), and kept 4.6 MiB
  // less of them than a pod that did not, which then counted as the measured process's alone.
  const seeder = serveIn(img, COMPANION_ENV, p.url, reg, tmp('idle-seeder-'));
  await seeder.url;
  await seeder.stop();
  const sv = serveIn(img, COMPANION_ENV, p.url, reg, tmp('idle-companion-'));
  const agent = new http.Agent({ keepAlive: false });
  const url = await sv.url;
  for (let i = 0; i < tasks; i++) await sendTask(url, i, agent);
  return async () => {
    await sv.stop();
    await p.stop();
  };
}

const fmtSplit = (s: Split): string =>
  `send→start ${s.toStart} · inference ${s.inference.join(' + ')} · tool ${s.tools.join(' + ')} · end→answer ${s.toAnswer} (ms)`;

async function main(): Promise<void> {
  if (!REF_FIX || !existsSync(join(REF_FIX, COMPONENTS.tool))) {
    console.error('idle-task bench: set MURMUR_REFERENCE_FIXTURES=<murmur checkout>/crates/murmur-cli/tests/fixtures (it holds echo-tool.wasm)');
    process.exit(1);
  }
  const img = OURS === 'image' ? imageRoot() : undefined;
  const reg = await registry();
  const arms = armsArg().map(({ name, env: { ROOT, ...env }, flags }) => ({ name, env, flags, img: ROOT ? rootAt(ROOT) : img }));
  const companions = await Promise.all([...new Set(arms.map((a) => a.img))].map((i) => companion(i, reg)));
  const figs = await pairedRecords(
    arms.map((a) => ({
      name: a.name,
      run: async (r) => {
        const f = await round(a.env, reg, a.img, a.flags);
        console.error(`round ${r} ${a.name}: warm ${fmtSplit(f.warm)}`);
        for (const s of f.idle) console.error(`round ${r} ${a.name}: idle ${s.total} ms: ${fmtSplit(s)}`);
        return f;
      },
    })),
    ROUNDS,
  );
  for (const stop of companions) await stop();
  const rows: [string, string, string?][] = [];
  const metric = (label: string, pick: (f: Fig) => number, fmt: (v: number) => string): void => {
    const names = arms.map((a) => `${label}, ${a.name}`);
    rows.push(
      ...pairedRows(
        summarize(
          names,
          arms.map((a) => figs.get(a.name)!.map(pick)),
        ),
        fmt,
      ),
    );
  };
  metric(`warm task (median of ${WARM}), send → completed`, (f) => f.warm.total, fmtTime);
  metric(`task after ${IDLE_S} s idle (mean of 2)`, (f) => (f.idle[0]!.total + f.idle[1]!.total) / 2, fmtTime);
  metric('idle task − warm task', (f) => (f.idle[0]!.total + f.idle[1]!.total) / 2 - f.warm.total, fmtTime);
  metric('private memory 1 s after a task', (f) => f.priv1, fmtMiB);
  metric('private memory, max over the 30 s after a task', (f) => f.privMax30, fmtMiB);
  metric('anonymous memory 1 s after a task (no file pages)', (f) => f.anon1, fmtMiB);
  metric('anonymous memory, max over the 30 s after a task', (f) => f.anonMax30, fmtMiB);
  metric(`RSS ${IDLE_S} s after a task`, (f) => f.at45.rss, fmtMiB);
  metric(`private ${IDLE_S} s after a task`, (f) => f.at45.priv, fmtMiB);
  metric(`time per task over ${BURST} tasks from ${SENDERS} senders (wall time / ${BURST})`, (f) => f.burstMs / BURST, fmtTime);
  metric(`peak RSS over ${BURST} tasks from ${SENDERS} senders`, (f) => f.peak.rss, fmtMiB);
  metric(`peak private memory over ${BURST} tasks from ${SENDERS} senders`, (f) => f.peak.priv, fmtMiB);
  metric(`peak anonymous memory over ${BURST} tasks from ${SENDERS} senders`, (f) => f.peak.anon, fmtMiB);
  console.log(
    `idle task: built-in driver-anthropic + the reference's echo-tool, ${img ? `the runtime image (node ${img.nodeVersion})` : 'dist/ with the image flags'}, ${ROUNDS} rounds; one idle companion per image; arms: ${arms.map((a) => `${a.name} ${JSON.stringify(a.env)}${a.flags.length ? ` ${a.flags.join(' ')}` : ''}${a.img && a.img !== img ? ` root ${a.img.root}` : ''}`).join('; ')}`,
  );
  console.log(table(rows));
  console.log(machineLine());
}

await main();
process.exit(0);
