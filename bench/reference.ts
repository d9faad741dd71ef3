/**
 * This runtime against the reference runtime (Murmur, Rust + Wasmtime), side by side: the SAME
 * components in both arms — the reference's own prebuilt `murmur-driver-anthropic.wasm`,
 * `echo-tool.wasm` and script capsule `capsule-allowlisted.wasm`, unchanged, packed into the same
 * `.mur.zip` files and published with each runtime's own `mur publish` — against the same scripted
 * provider (test/provider/, real HTTP, the Anthropic wire format), from the same client.
 *
 * Nothing of the reference is in this repository: the bench takes its CLI and its fixture folder
 * from the environment and stops (exit 1) saying what to set when they are missing:
 *   MURMUR_REFERENCE_BIN       the reference's `mur` binary (cargo build --release -p murmur-cli)
 *   MURMUR_REFERENCE_FIXTURES  its crates/murmur-cli/tests/fixtures folder (holds the components)
 * `--ours-only` runs this runtime's arm alone (still needs MURMUR_REFERENCE_FIXTURES).
 *
 * Arms: `ours (image)` is the runtime image itself — its Node (24), /app, ENV and ENTRYPOINT, run in a
 * chroot of its unpacked files (image-root.ts; test/images/build.sh builds the image first when its
 * inputs changed) — what a pod runs; `ours` is `bin/mur` from compiled dist/ (`npm run build` first;
 * MUR_FROM=dist) on this machine's node with the node flags of the image's ENTRYPOINT and its malloc
 * settings (`--ours image|dist|both`, default both); both run `mur serve`
 * with --metrics-port 0 (no /metrics listener) and `mur run`; `reference` is the reference's
 * `mur run --manifest … --json` (agent capsules serve A2A; `--lifecycle-after-task sleep` keeps it
 * taking tasks) and `mur run --manifest` for the script capsule. The capsule manifest is the same
 * text for both (the reference's format: inference.transport/endpoint/api_key, network.allow,
 * lifecycle.task_acceptance: queue). Each task is two provider turns: a `tool_use` of echo-tool,
 * then the answer. No hooks bound. A task is sent with JSON-RPC `message/send` on a fresh
 * connection; it counts as done when the answer (ours: blocking send) or `tasks/get` polled every
 * 2 ms (the reference answers `submitted`) says completed.
 *
 * Rows, per round and per arm (the arms alternate, the order reversing every other round; the
 * paired ratio is ours / reference round by round):
 * - first run ever: empty component caches (ours: a fresh MURMUR_COMPONENT_CACHE, so the transpile
 *   runs; the reference keeps no cache and compiles every start) → first task completed: wall,
 *   CPU (user + system of the process tree), max RSS (VmHWM summed over the process tree when the
 *   task completed: children that have exited by then, such as ours' transpile processes, are not
 *   in it) and the tree's peak RSS sampled every 20 ms while it ran (they are);
 * - warm start: process start → agent card URL printed (ready), → first task completed;
 * - RSS idle after one task: RSS of the process tree 20 s after the first task completed (past the
 *   10 s after which this runtime lets go of its booted spare worker), and again 45 s after it (past
 *   the 30 s after which it lets go of the session's component thread, MURMUR_COMPONENT_IDLE_MS);
 * - a task after that idle: the next task's time from send to completed (ours starts its component
 *   thread and instances afresh for it; the reference has nothing to restart);
 * - throughput: then 100 tasks from 8 concurrent senders, wall / 100 = time per task;
 * - RSS idle after 102 tasks: 20 s and 45 s after the last one; max RSS: VmHWM of the warm process
 *   at 20 s;
 * - script capsule end to end: `mur run` of capsule-allowlisted.wasm (invokes echo-tool once, writes
 *   out/result.txt), wall and max RSS (/usr/bin/time), warm caches.
 *
 *   node --import tsx bench/reference.ts [--rounds 3] [--tasks 100] [--senders 8] [--ours image|dist|both] [--ours-only]
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { zipSync } from 'fflate';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { tmp } from '../test/loop/kit.ts';
import { startScriptedProvider, type ScriptTurn } from '../test/provider/scripted-provider.ts';
import { MUR, murCommand } from './serving.ts';
import { spawnServer, treeStat, type Served, type Tree } from './proc-tree.ts';
import { imageRoot, type ImageRoot } from './image-root.ts';
import { choiceArg, fmtMiB, fmtRate, fmtTime, machineLine, paired, pairedRows, summarize, table, numArg } from './paired.ts';

const ROUNDS = numArg('rounds', 3);
const TASKS = numArg('tasks', 100);
const SENDERS = numArg('senders', 8);
const OURS_ONLY = process.argv.includes('--ours-only');
/** Which of this runtime's arms run: the runtime image's files (what a pod runs), dist/ on this machine's node, or both. */
const OURS_ARG = choiceArg('ours', ['image', 'dist', 'both'] as const, 'both');
const OURS_KINDS = (OURS_ARG === 'both' ? ['image', 'dist'] : [OURS_ARG]) as ('image' | 'dist')[];

const REF_BIN = process.env.MURMUR_REFERENCE_BIN;
const REF_FIX = process.env.MURMUR_REFERENCE_FIXTURES;
const COMPONENTS = {
  driver: 'drivers/anthropic/driver/murmur-driver-anthropic.wasm',
  tool: 'run/components/echo-tool.wasm',
  script: 'run/components/capsule-allowlisted.wasm',
};

function requireEnv(): void {
  const missing: string[] = [];
  if (!REF_FIX || !Object.values(COMPONENTS).every((c) => existsSync(join(REF_FIX, c)))) {
    missing.push(`  MURMUR_REFERENCE_FIXTURES=<murmur checkout>/crates/murmur-cli/tests/fixtures   (must hold ${Object.values(COMPONENTS).join(', ')}; now ${REF_FIX ? `'${REF_FIX}'` : 'unset'})`);
  }
  if (!OURS_ONLY && (!REF_BIN || !existsSync(REF_BIN))) {
    missing.push(`  MURMUR_REFERENCE_BIN=<murmur checkout>/target/release/mur   (cargo build --release -p murmur-cli in github.com/murmur-nexus/murmur; now ${REF_BIN ? `'${REF_BIN}' (no such file)` : 'unset'}; or pass --ours-only)`);
  }
  if (!existsSync(join(PROJECT_ROOT, 'dist/.built'))) missing.push('  dist/: run `npm run build` first (the `ours` arm runs compiled dist/)');
  if (missing.length) {
    console.error(`reference bench: cannot run; set:\n${missing.join('\n')}`);
    process.exit(1);
  }
}

/**
 * RSS once idle: 20 s after the last task. This runtime lets go of the booted worker it keeps for
 * the next instance start (and the token counter's worker) after 10 s idle, and Node 24's V8 keeps
 * an ended worker's heap pages in a process-wide pool for 8 s more before it returns them (measured:
 * a worker's 30 MiB stayed resident 2 s after terminate(), gone 9.5 s after); a pod idles far
 * longer. The peak before it is the max-RSS row. The second reading is 45 s after: the session's
 * component thread is let go after 30 s without a call (MURMUR_COMPONENT_IDLE_MS), and its heap
 * pages 8 s after that.
 */
const IDLE_EARLY_MS = 20_000;
const IDLE_LATE_MS = 45_000;

/** RSS of the tree once `ms` have passed since `since` (a performance.now() reading). */
async function treeAt(pid: number, since: number, ms: number): Promise<number> {
  await new Promise((r) => setTimeout(r, Math.max(0, since + ms - performance.now())));
  return treeStat(pid).rss;
}

// ---------------------------------------------------------------------------------------- client

function rpc(url: string, method: string, params: unknown): Promise<Record<string, unknown>> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        try {
          resolve(JSON.parse(text) as Record<string, unknown>);
        } catch {
          reject(new Error(`${method}: not JSON: ${text.slice(0, 400)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** Sends one task and resolves when it completed (the answer or tasks/get says so). */
async function sendTask(url: string, i: number): Promise<void> {
  const message = { kind: 'message', messageId: `m${i}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text: `task ${i}` }] };
  let r = await rpc(url, 'message/send', { message });
  for (;;) {
    const task = r.result as { id?: string; status?: { state?: string } } | undefined;
    const state = task?.status?.state;
    if (state === 'completed') return;
    if (!task?.id || !state || TERMINAL.has(state)) throw new Error(`task ${i}: ${JSON.stringify(r).slice(0, 400)}`);
    await new Promise((res) => setTimeout(res, 2));
    r = await rpc(url, 'tasks/get', { id: task.id });
  }
}

// ---------------------------------------------------------------------------------------- setup

function zipOf(manifest: string, wasm: string): Uint8Array {
  // The reference's package layout: murmur.yaml and the component at the root.
  return zipSync({ 'murmur.yaml': Buffer.from(manifest), 'tool.wasm': readFileSync(wasm) });
}

const DRIVER = { name: 'murmur-driver-anthropic', version: '0.1.4' };
const TOOL = { name: 'echo-tool', version: '0.1.0' };

function packages(dir: string): string[] {
  const driver = join(dir, `${DRIVER.name}-${DRIVER.version}.mur.zip`);
  writeFileSync(driver, zipOf(`name: ${DRIVER.name}\nversion: ${DRIVER.version}\nruntime: driver\n`, join(REF_FIX!, COMPONENTS.driver)));
  const tool = join(dir, `${TOOL.name}-${TOOL.version}.mur.zip`);
  writeFileSync(tool, zipOf(`name: ${TOOL.name}\nversion: ${TOOL.version}\nruntime: wasm\ndescription: Echoes its input.\ninput_schema:\n  type: object\n  properties:\n    data:\n      type: string\n`, join(REF_FIX!, COMPONENTS.tool)));
  return [driver, tool];
}

const API_KEY = 'test-key-not-secret';

function agentYaml(endpoint: string): string {
  return [
    'name: ref-agent', 'version: 0.1.0',
    'artifacts:',
    `  - name: ${TOOL.name}`, `    version: ${TOOL.version}`, '    runtime: tool',
    `  - name: ${DRIVER.name}`, `    version: ${DRIVER.version}`, '    runtime: driver',
    'capabilities:', '  network:', '    allow:', `      - ${endpoint}`,
    'inference:', '  transport: http', `  endpoint: ${endpoint}`, '  model: test-model', `  api_key: ${API_KEY}`, '  driver:', `    artifact: ${DRIVER.name}`,
    'lifecycle:', '  task_acceptance: queue', `  queue_depth: ${TASKS + 8}`, '',
  ].join('\n');
}

const SCRIPT_YAML = `name: capsule\nversion: 0.0.1\nartifacts:\n  - name: ${TOOL.name}\n    version: ${TOOL.version}\n`;

const TASK_TURNS: ScriptTurn[] = [{ toolCalls: [{ name: TOOL.name, input: { data: 'tick' } }] }, { text: 'done' }];

interface Subject {
  name: string;
  /** Starts a serving process for the capsule in `dir`; cold = with empty component caches. */
  serve(dir: string, cold: boolean): Served;
  /** `mur run` of the script capsule: wall ms and max RSS bytes. */
  script(): { wall: number; hwm: number };
}

/**
 * This runtime: `dist` = the checkout's compiled dist/ on this machine's node with the image's node
 * flags and malloc settings; `image` = the runtime image's own files (its Node, /app, ENV and
 * ENTRYPOINT) in a chroot (image-root.ts) — what a pod runs.
 */
function ours(kind: 'dist' | 'image', img?: ImageRoot): Subject {
  const registry = tmp('ref-ours-reg-');
  const cache = tmp(`ref-ours-${kind}-cache-`);
  for (const p of packages(tmp('ref-ours-pkg-'))) {
    const r = spawnSync(process.execPath, [MUR, 'publish', p, '--registry', registry], { env: { PATH: process.env.PATH!, MUR_FROM: 'dist' } });
    if (r.status !== 0) throw new Error(`mur publish ${p}: ${r.stderr}`);
  }
  const scriptDir = tmp('ref-ours-script-');
  writeFileSync(join(scriptDir, 'murmur.yaml'), SCRIPT_YAML);
  copyFileSync(join(REF_FIX!, COMPONENTS.script), join(scriptDir, 'capsule.wasm'));
  const home = tmp('ref-ours-home-');
  const command = (args: string[], cache: string) => murCommand(args, { HOME: home, MURMUR_COMPONENT_CACHE: cache }, kind === 'image' ? { from: 'dist', image: img! } : { from: 'dist', asImage: true });
  return {
    name: kind === 'image' ? 'ours (image)' : 'ours',
    serve(dir, cold) {
      const c = command(['serve', dir, '--a2a-port', '0', '--metrics-port', '0', '--registry', registry, '--workdir', tmp('ref-ours-work-'), '--quiet'], cold ? tmp('ref-ours-cold-') : cache);
      return spawnServer(c.cmd, c.args, c.env, (out) => /serving \S+ \S+ at (http:\/\/\S+)/.exec(out)?.[1]);
    },
    script() {
      const c = command(['run', scriptDir, '--registry', registry, '--work-root', tmp('ref-ours-swork-'), '--quiet', '--task', 'run'], cache);
      const t = performance.now();
      const r = spawnSync('/usr/bin/time', ['-f', 'maxrss=%M', c.cmd, ...c.args], { env: c.env });
      const wall = performance.now() - t;
      if (r.status !== 0) throw new Error(`${kind}: mur run (script) exited ${r.status}: ${r.stdout}${r.stderr}`);
      return { wall, hwm: Number(/maxrss=(\d+)/.exec(r.stderr.toString())?.[1] ?? 0) * 1024 };
    },
  };
}

function reference(bin: string): Subject {
  const home = tmp('ref-ref-home-');
  const env = { PATH: process.env.PATH!, HOME: home };
  for (const p of packages(tmp('ref-ref-pkg-'))) {
    const r = spawnSync(bin, ['publish', p], { env });
    if (r.status !== 0) throw new Error(`reference mur publish ${p}: ${r.stdout}${r.stderr}`);
  }
  const scriptDir = tmp('ref-ref-script-');
  writeFileSync(join(scriptDir, 'murmur.yaml'), SCRIPT_YAML);
  copyFileSync(join(REF_FIX!, COMPONENTS.script), join(scriptDir, 'capsule.wasm'));
  return {
    name: 'reference',
    // The reference keeps no compiled-component cache: every start compiles, cold or not.
    serve(dir) {
      return spawnServer(bin, ['run', '--manifest', join(dir, 'murmur.yaml'), '--json', '--lifecycle-after-task', 'sleep', '--workdir', tmp('ref-ref-work-')], env, (out) => {
        const m = /"url":"(?:localhost|127\.0\.0\.1):(\d+)"/.exec(out);
        return m ? `http://127.0.0.1:${m[1]}/` : undefined;
      });
    },
    script() {
      const t = performance.now();
      const r = spawnSync('/usr/bin/time', ['-f', 'maxrss=%M', bin, 'run', '--manifest', join(scriptDir, 'murmur.yaml')], { env });
      const wall = performance.now() - t;
      if (r.status !== 0 || !/status:\s+ok/.test(r.stdout.toString())) throw new Error(`reference: mur run (script) exited ${r.status}: ${r.stdout}${r.stderr}`);
      return { wall, hwm: Number(/maxrss=(\d+)/.exec(r.stderr.toString())?.[1] ?? 0) * 1024 };
    },
  };
}

// ------------------------------------------------------------------------------------------ main

type Fig = { cold: Tree & { wall: number; peak: number }; ready: number; firstTask: number; idle1: number; idle1Late: number; afterIdle: number; perTask: number; idle100: number; idle100Late: number; warmHwm: number; script: { wall: number; hwm: number } };

async function round(s: Subject): Promise<Fig> {
  const capsule = (endpoint: string): string => {
    const dir = tmp(`ref-${s.name}-capsule-`);
    writeFileSync(join(dir, 'murmur.yaml'), agentYaml(endpoint));
    return dir;
  };
  // First run ever.
  const p1 = await startScriptedProvider({ turns: TASK_TURNS, apiKey: API_KEY });
  const cold = s.serve(capsule(p1.url), true);
  // The tree's RSS sampled meanwhile: VmHWM read at the end misses children that have exited by
  // then (ours transpiles in short-lived child processes).
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, treeStat(cold.proc.pid!).rss)), 20);
  await sendTask(await cold.url, 0);
  clearInterval(sampler);
  const coldWall = performance.now() - cold.t0;
  const cs = { ...treeStat(cold.proc.pid!), peak };
  await cold.stop();
  await p1.stop();

  // Warm start, one task, idle; the throughput run, idle.
  const p = await startScriptedProvider({ turns: Array.from({ length: 2 + TASKS }, () => TASK_TURNS).flat(), apiKey: API_KEY });
  const sv = s.serve(capsule(p.url), false);
  const url = await sv.url;
  const ready = performance.now() - sv.t0;
  await sendTask(url, 0);
  const firstDone = performance.now();
  const firstTask = firstDone - sv.t0;
  const pid = sv.proc.pid!;
  const idle1 = await treeAt(pid, firstDone, IDLE_EARLY_MS);
  const idle1Late = await treeAt(pid, firstDone, IDLE_LATE_MS);
  const a0 = performance.now();
  await sendTask(url, 1);
  const afterIdle = performance.now() - a0;
  let next = 2;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: SENDERS }, async () => {
    while (next <= TASKS + 1) await sendTask(url, next++);
  }));
  const lastDone = performance.now();
  const perTask = (lastDone - t0) / TASKS;
  const idle100 = await treeAt(pid, lastDone, IDLE_EARLY_MS);
  const warmHwm = treeStat(pid).hwm;
  const idle100Late = await treeAt(pid, lastDone, IDLE_LATE_MS);
  await sv.stop();
  await p.stop();

  return { cold: { ...cs, wall: coldWall }, ready, firstTask, idle1, idle1Late, afterIdle, perTask, idle100, idle100Late, warmHwm, script: s.script() };
}

/** One untimed task and script run per arm: fills our warm component cache (and the OS page cache for both). */
async function prime(s: Subject): Promise<void> {
  const p = await startScriptedProvider({ turns: TASK_TURNS, apiKey: API_KEY });
  const dir = tmp(`ref-${s.name}-prime-`);
  writeFileSync(join(dir, 'murmur.yaml'), agentYaml(p.url));
  const sv = s.serve(dir, false);
  await sendTask(await sv.url, 0);
  await sv.stop();
  await p.stop();
  s.script();
}

async function main(): Promise<void> {
  requireEnv();
  const img = OURS_KINDS.includes('image') ? imageRoot() : undefined;
  const subjects = [...OURS_KINDS.map((k) => ours(k, img)), ...(OURS_ONLY ? [] : [reference(REF_BIN!)])];
  for (const s of subjects) await prime(s);
  const figs = new Map<string, Fig[]>();
  // The reference is the baseline: ratios read ours / reference.
  const arms = [...subjects].reverse();
  await paired(arms.map((s) => ({ name: s.name, run: async () => {
    figs.set(s.name, [...(figs.get(s.name) ?? []), await round(s)]);
    return 0;
  } })), ROUNDS);

  const rows: [string, string, string?][] = [];
  const metric = (label: string, pick: (f: Fig) => number, fmt: (v: number) => string): void => {
    rows.push(...pairedRows(summarize(arms.map((a) => `${label}, ${a.name}`), arms.map((a) => figs.get(a.name)!.map(pick))), fmt));
  };
  metric('RSS idle 20 s after one task', (f) => f.idle1, fmtMiB);
  metric('RSS idle 45 s after one task', (f) => f.idle1Late, fmtMiB);
  metric(`RSS idle 20 s after ${TASKS + 2} tasks`, (f) => f.idle100, fmtMiB);
  metric(`RSS idle 45 s after ${TASKS + 2} tasks`, (f) => f.idle100Late, fmtMiB);
  metric('a task after 45 s idle, send → completed', (f) => f.afterIdle, fmtTime);
  metric(`max RSS over start, one task and ${TASKS} more`, (f) => f.warmHwm, fmtMiB);
  metric(`time per task, ${TASKS} tasks, ${SENDERS} senders`, (f) => f.perTask, fmtTime);
  metric('throughput', (f) => 1000 / f.perTask, fmtRate('tasks/s'));
  metric('script capsule end to end (mur run), wall', (f) => f.script.wall, fmtTime);
  metric('script capsule end to end (mur run), max RSS', (f) => f.script.hwm, fmtMiB);
  metric('process start → agent card URL', (f) => f.ready, fmtTime);
  metric('process start → first task completed', (f) => f.firstTask, fmtTime);
  metric('first run ever: start → first task, wall', (f) => f.cold.wall, fmtTime);
  metric('first run ever: CPU', (f) => f.cold.cpuMs, fmtTime);
  metric('first run ever: max RSS', (f) => f.cold.hwm, fmtMiB);
  metric('first run ever: peak RSS of the process tree, sampled every 20 ms', (f) => f.cold.peak, fmtMiB);
  console.log(`reference runtime side by side: the reference's own driver-anthropic + echo-tool (+ capsule-allowlisted script) components in every arm, scripted provider over HTTP, no hooks; mur serve without /metrics; ${[img ? `ours (image) = the runtime image's files in a chroot (node ${img.nodeVersion}, its ENV and ENTRYPOINT)` : '', OURS_KINDS.includes('dist') ? `ours = dist/ on node ${process.version} with the image's node flags` : ''].filter(Boolean).join('; ')}; ${ROUNDS} rounds`);
  console.log(table(rows));
  console.log(machineLine());
}

await main();
process.exit(0);
