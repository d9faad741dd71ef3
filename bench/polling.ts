/**
 * What the component threads' polling (runtime/host/doorbell.ts) does to the whole stack: `mur
 * serve` with the real anthropic driver and echo tool (as bench/stack.ts: each task a tool call to
 * `echo`, then the answer, from the scripted provider over HTTP; no hooks), with polling as by
 * default (MURMUR_COMPONENT_SPIN_US unset: 50 µs) against none (MURMUR_COMPONENT_SPIN_US=0). The
 * arms alternate round by round, each round a fresh process per arm on a warm component cache:
 * - throughput: 100 tasks from 8 concurrent senders (the main thread never polls while another
 *   call is in flight, so this shows what the workers' polling costs or saves under load);
 * - one sender: 50 tasks one after another, time per task (calls rarely overlap).
 * Sources through tsx, or compiled dist/ when built.
 *
 *   node --import tsx bench/polling.ts [--rounds 5] [--tasks 100] [--senders 8]
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import http from 'node:http';
import { tmp } from '../test/loop/kit.ts';
import { BUILT_FROM, sendTask } from './serving.ts';
import { serveStack, stackCapsule } from './serving-stack.ts';
import type { ScriptTurn } from '../test/provider/scripted-provider.ts';
import { fmtRate, fmtTime, machineLine, numArg, paired, pairedRows, summarize, table } from './paired.ts';

const ROUNDS = numArg('rounds', 5);
const TASKS = numArg('tasks', 100);
const SENDERS = numArg('senders', 8);
const SEQUENTIAL = 50;
const TURNS: ScriptTurn[] = [{ toolCalls: [{ name: 'echo', input: { text: 'tick' } }] }, { text: 'done' }];

const ARMS: { name: string; env: Record<string, string> }[] = [
  { name: 'polling (default)', env: {} },
  { name: 'no polling (MURMUR_COMPONENT_SPIN_US=0)', env: { MURMUR_COMPONENT_SPIN_US: '0' } },
];

async function main(): Promise<void> {
  const from = BUILT_FROM;
  const stack = await stackCapsule('polling', { echo: true, queueDepth: SENDERS * 2 });
  const cache = tmp('polling-cache-');
  const agent = new http.Agent({ keepAlive: true, maxSockets: SENDERS });

  // One provider per process: its tasks run in order, each two turns.
  const run = async (env: Record<string, string>, tasks: number, senders: number): Promise<number> => {
    const s = await serveStack(from, stack, { turns: Array.from({ length: tasks + 1 }, () => TURNS).flat() }, { cache, env });
    try {
      const url = await s.url;
      await sendTask(url, 0, agent); // the first task starts the components: not timed
      let next = 1;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: senders }, async () => {
          while (next <= tasks) await sendTask(url, next++, agent);
        }),
      );
      return (performance.now() - t0) / tasks;
    } finally {
      await s.stop();
    }
  };
  await run({}, 2, 1); // primes the component cache and the worker bundle, untimed

  const perTask = new Map<string, number[]>();
  const sequential = new Map<string, number[]>();
  await paired(
    ARMS.map((a) => ({
      name: a.name,
      run: async () => {
        perTask.set(a.name, [...(perTask.get(a.name) ?? []), await run(a.env, TASKS, SENDERS)]);
        sequential.set(a.name, [...(sequential.get(a.name) ?? []), await run(a.env, SEQUENTIAL, 1)]);
        return 0;
      },
    })),
    ROUNDS,
  );
  const names = (label: string): string[] => ARMS.map((a) => `${label}, ${a.name}`);
  const rows: [string, string, string?][] = [
    ...pairedRows(
      summarize(
        names(`throughput, ${TASKS} tasks, ${SENDERS} senders`),
        ARMS.map((a) => perTask.get(a.name)!.map((ms) => 1000 / ms)),
      ),
      fmtRate('tasks/s'),
    ),
    ...pairedRows(
      summarize(
        names(`time per task, ${TASKS} tasks, ${SENDERS} senders`),
        ARMS.map((a) => perTask.get(a.name)!),
      ),
      fmtTime,
    ),
    ...pairedRows(
      summarize(
        names(`time per task, ${SEQUENTIAL} tasks, one sender`),
        ARMS.map((a) => sequential.get(a.name)!),
      ),
      fmtTime,
    ),
  ];
  agent.destroy();
  console.log(
    `component threads polling for each other (host/doorbell.ts): mur serve from ${from === 'dist' ? 'compiled dist/' : 'sources via tsx'}, driver-anthropic + echo-tool, scripted provider over HTTP, no hooks; ${ROUNDS} rounds`,
  );
  console.log(table(rows));
  console.log(machineLine());
}

await main();
process.exit(0);
