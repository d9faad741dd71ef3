/**
 * The headline bench: the whole stack as a pod runs it. `bin/mur serve` as its own process (A2A
 * front door, agent loop, the real anthropic driver and echo tool components built from
 * components/ and test/fixtures/, telemetry and /metrics as served), against the scripted provider
 * (real HTTP, the Anthropic wire format). Each task is two provider turns: a tool call to `echo`,
 * then the answer. No hooks bound.
 *
 * Per round and per arm (arms: the TypeScript sources through tsx, and compiled dist/ when built;
 * they alternate, the order reversing every other round):
 * - first run ever: an empty component cache (transpile included) → first task completed: wall,
 *   CPU (user + system of the process) and max RSS (VmHWM) at that moment;
 * - warm start: process start → first task completed, then RSS once idle after that task;
 * - throughput: 100 tasks from 8 concurrent senders (queue acceptance), tasks/s, then RSS idle;
 * - a script capsule end to end: `bin/mur run` of the step-driven capsule, wall and max RSS.
 *
 *   node --import tsx bench/stack.ts [--rounds 3] [--tasks 100] [--senders 8]
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { tmp } from '../test/loop/kit.ts';
import { BUILT_FROM, MUR, idleRss, procStat, sendTask } from './serving.ts';
import { serveStack, stackCapsule } from './serving-stack.ts';
import type { ScriptTurn } from '../test/provider/scripted-provider.ts';
import { demoYaml, program, scriptRegistry } from '../test/script/helpers.ts';
import { fmtMiB, fmtRate, fmtTime, machineLine, pairedRecords, pairedRows, summarize, table, numArg } from './paired.ts';

const ROUNDS = numArg('rounds', 3);
const TASKS = numArg('tasks', 100);
const SENDERS = numArg('senders', 8);
const agent = new http.Agent({ keepAlive: true, maxSockets: SENDERS });
const send = (url: string, i: number): Promise<void> => sendTask(url, i, agent);

const TASK_TURNS: ScriptTurn[] = [{ toolCalls: [{ name: 'echo', input: { text: 'tick' } }] }, { text: 'done' }];

async function main(): Promise<void> {
  const stack = await stackCapsule('stack', { echo: true, queueDepth: SENDERS * 2 });
  const scriptReg = await scriptRegistry();
  const scriptCapsule = tmp('stack-script-');
  writeFileSync(join(scriptCapsule, 'murmur.yaml'), demoYaml());
  const warmCache = tmp('stack-cache-');

  const froms: ('src' | 'dist')[] = BUILT_FROM === 'dist' ? ['src', 'dist'] : ['src'];

  // One provider per serve process: tasks run in order within a process, so each provider serves
  // tool call, answer, tool call, answer, …
  const script = (tasks: number) => ({ turns: Array.from({ length: tasks }, () => TASK_TURNS).flat() });

  // Prime the warm cache (and the worker bundle) once, untimed.
  {
    const s = await serveStack('src', stack, script(1), { cache: warmCache });
    await send(await s.url, 0);
    await s.stop();
    // …and the script capsule's component, so no arm's `mur run` pays its transpile.
    const r = spawnSync(
      process.execPath,
      [MUR, 'run', scriptCapsule, '--registry', scriptReg, '--work-root', tmp('stack-script-work-'), '--quiet', '--task', program()],
      {
        env: { PATH: process.env.PATH, MUR_FROM: 'src', MURMUR_COMPONENT_CACHE: warmCache },
      },
    );
    if (r.status !== 0) throw new Error(`mur run (script) exited ${r.status}: ${r.stderr}`);
  }

  type Fig = {
    cold: { wall: number; cpu: number; hwm: number };
    firstTask: number;
    ready: number;
    idle1: number;
    tps: number;
    idle100: number;
    script: { wall: number; hwm: number };
  };
  const round = async (from: 'src' | 'dist'): Promise<Fig> => {
    // First run ever: nothing transpiled.
    const cold = await serveStack(from, stack, script(1), { cache: tmp('stack-cold-cache-') });
    await send(await cold.url, 0);
    const coldWall = performance.now() - cold.t0;
    const cs = procStat(cold.proc.pid!);
    await cold.stop();

    // Warm start, one task, idle; then the throughput run, idle.
    const s = await serveStack(from, stack, script(1 + TASKS), { cache: warmCache });
    const url = await s.url;
    const ready = performance.now() - s.t0;
    await send(url, 0);
    const firstTask = performance.now() - s.t0;
    const idle1 = await idleRss(s.proc.pid!);
    let next = 1;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (next <= TASKS) await send(url, next++);
      }),
    );
    const tps = TASKS / ((performance.now() - t0) / 1000);
    const idle100 = await idleRss(s.proc.pid!);
    await s.stop();

    // A script capsule end to end through `mur run`.
    const st = performance.now();
    const r = spawnSync(
      '/usr/bin/time',
      [
        '-f',
        'maxrss=%M',
        process.execPath,
        MUR,
        'run',
        scriptCapsule,
        '--registry',
        scriptReg,
        '--work-root',
        tmp('stack-script-work-'),
        '--quiet',
        '--task',
        program(),
      ],
      {
        env: { PATH: process.env.PATH, MUR_FROM: from, MURMUR_COMPONENT_CACHE: warmCache },
      },
    );
    const scriptWall = performance.now() - st;
    if (r.status !== 0) throw new Error(`mur run (script) exited ${r.status}: ${r.stderr}`);
    const hwm = Number(/maxrss=(\d+)/.exec(r.stderr.toString())?.[1] ?? 0) * 1024;
    return { cold: { wall: coldWall, cpu: cs.cpuMs, hwm: cs.hwm }, firstTask, ready, idle1, tps, idle100, script: { wall: scriptWall, hwm } };
  };
  // Both arms run inside each round, alternating; the figures are then paired by round.
  const figs = await pairedRecords(
    froms.map((f) => ({ name: f, run: () => round(f) })),
    ROUNDS,
  );

  const rows: [string, string, string?][] = [];
  const metric = (label: string, pick: (f: Fig) => number, fmt: (v: number) => string): void => {
    const names = froms.map((f) => `${label}, ${f === 'src' ? 'sources via tsx' : 'compiled dist/'}`);
    rows.push(
      ...pairedRows(
        summarize(
          names,
          froms.map((f) => figs.get(f)!.map(pick)),
        ),
        fmt,
      ),
    );
  };
  metric(`throughput, ${TASKS} tasks, ${SENDERS} senders`, (f) => f.tps, fmtRate('tasks/s'));
  metric('time per task (1 / throughput)', (f) => 1000 / f.tps, fmtTime);
  metric('RSS idle after one task', (f) => f.idle1, fmtMiB);
  metric(`RSS idle after ${TASKS + 1} tasks`, (f) => f.idle100, fmtMiB);
  metric('process start → agent card served', (f) => f.ready, fmtTime);
  metric('process start → first task completed', (f) => f.firstTask, fmtTime);
  metric('first run (transpile): start → first task, wall', (f) => f.cold.wall, fmtTime);
  metric('first run (transpile): CPU', (f) => f.cold.cpu, fmtTime);
  metric('first run (transpile): max RSS', (f) => f.cold.hwm, fmtMiB);
  metric('script capsule end to end (mur run), wall', (f) => f.script.wall, fmtTime);
  metric('script capsule end to end (mur run), max RSS', (f) => f.script.hwm, fmtMiB);
  agent.destroy();
  console.log(`whole stack: mur serve (A2A, agent loop, driver-anthropic + echo-tool components, scripted provider over HTTP, no hooks), ${ROUNDS} rounds`);
  console.log(table(rows));
  console.log(machineLine());
}

await main();
process.exit(0);
