/**
 * Bounded memory under load (issue: RSS rose to ≈1 GiB under 200 clients with no plateau, and a
 * 300 MB heap limit killed the process after 1 013 tasks of 100 KiB). Includes: `mur serve` as its own
 * process — with `--runtime image` (the default) the runtime image itself, its Node 24, /app and
 * ENV in a chroot (image-root.ts: what a pod runs; needs root, builds the image when its inputs
 * changed); with `--runtime dist` `bin/mur` from compiled dist/ (else the sources) on this
 * machine's node, started as the image starts it (the ENTRYPOINT flags, MALLOC_ARENA_MAX and
 * NODE_OPTIONS: serving.ts imageProcess) — with the real anthropic driver
 * component and no tools, queue acceptance (depth 64), the default SQLite task store, the scripted
 * provider over real HTTP answering every turn with text; no hooks. Two phases:
 * - soak: C clients (default 200) each send `message/send` with a fresh 100 KiB text message in a
 *   loop for S seconds (default 360); a rejected send (queue full) backs off 1 s, as a client honouring
 *   the rejection would, and sends again.
 *   RSS is read from /proc every 5 s. Prints the tasks completed / rejected / failed, RSS per minute,
 *   the maximum, and the growth over the last minute: the last sample against the one a minute
 *   before, and (the plateau criterion: under 5%, below 300 MiB) the median of the last minute's
 *   samples against the median of the minute before.
 * - heap limit: a fresh process under NODE_OPTIONS=--max-old-space-size=300 runs N tasks (default
 *   10 000) of 100 KiB from 32 clients; prints how many completed, failed, and whether it lived.
 *
 *   node --import tsx bench/soak.ts [--clients 200] [--secs 360] [--tasks 10000] [--runtime image|dist]
 *     [--env NAME=VALUE]…   (laid over the serving process's environment in both phases, e.g.
 *                           MURMUR_DRIVER_RETIRE_GROWTH_MIB=16; printed in the report)
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import http from 'node:http';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { tmp } from '../test/loop/kit.ts';
import { choiceArg, fmtMiB, machineLine, numArg } from './paired.ts';
import { median } from './stats.ts';
import { BUILT_FROM, procStat, sendMessage, type Serving } from './serving.ts';
import { serveStack, stackCapsule } from './serving-stack.ts';
import { imageRoot } from './image-root.ts';

const CLIENTS = numArg('clients', 200);
const SECS = numArg('secs', 360);
const TASKS = numArg('tasks', 10_000);
const FROM = BUILT_FROM;
const RUNTIME = choiceArg('runtime', ['image', 'dist'] as const, 'image');
const IMAGE = RUNTIME === 'image' ? imageRoot() : undefined;
const MESSAGE_BYTES = 100 * 1024;
/** `--env NAME=VALUE`, repeatable: what an experiment changes in the serving process. */
const EXTRA_ENV: Record<string, string> = {};
for (let i = 0; i < process.argv.length; i++) {
  if (process.argv[i] !== '--env') continue;
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(process.argv[i + 1] ?? '');
  if (!m) {
    console.error(`--env: expected NAME=VALUE, got ${process.argv[i + 1] === undefined ? 'nothing' : `'${process.argv[i + 1]}'`}`);
    process.exit(2);
  }
  EXTRA_ENV[m[1]!] = m[2]!;
}

const WORDS = 'agent capsule runtime token budget hook policy driver tool trace stream replica queue task context'.split(' ');
function message(): string {
  let s = '';
  while (s.length < MESSAGE_BYTES) s += `${WORDS[Math.floor(Math.random() * WORDS.length)]} ${Math.floor(Math.random() * 1e6)} `;
  return s.slice(0, MESSAGE_BYTES);
}

type Outcome = 'completed' | 'rejected' | 'failed';

/** One send's outcome: a full queue answers 503/429 or a task in state `rejected` (acceptance: queue), or a JSON-RPC error. */
async function send(agent: http.Agent, url: string, text: string): Promise<Outcome> {
  try {
    const a = await sendMessage(url, 1, text, agent);
    if (a.status === 503 || a.status === 429) return 'rejected';
    const j = JSON.parse(a.body) as { result?: { status?: { state?: string } }; error?: unknown };
    const state = j.result?.status?.state;
    return state === 'completed' ? 'completed' : state === 'rejected' || j.error ? 'rejected' : 'failed';
  } catch {
    return 'failed';
  }
}

async function start(env: Record<string, string>): Promise<{ s: Serving; url: string; stop(): Promise<void> }> {
  const stack = await stackCapsule('soak', { echo: false, queueDepth: 64 });
  // The image's chroot sees /tmp only: its transpile cache is one of its own (the first start transpiles the driver).
  const cache = IMAGE ? tmp('soak-image-cache-') : join(PROJECT_ROOT, '.cache/components');
  const s = await serveStack(
    FROM,
    stack,
    { turns: [{ text: 'done' }], onExhausted: 'repeat-last' },
    { cache, env: { ...EXTRA_ENV, ...env }, provider: { keep: 0 }, ...(IMAGE ? { image: IMAGE } : { asImage: true }) },
  );
  return { s, url: await s.url, stop: () => s.stop() };
}

async function soak(): Promise<string[]> {
  const { s, url, stop } = await start({});
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const counts: Record<Outcome, number> = { completed: 0, rejected: 0, failed: 0 };
  const samples: { t: number; rss: number }[] = [];
  const t0 = performance.now();
  const end = t0 + SECS * 1000;
  const sampler = setInterval(() => samples.push({ t: (performance.now() - t0) / 1000, rss: procStat(s.proc.pid!).rss }), 5000);
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        const o = await send(agent, url, message());
        counts[o]++;
        if (o === 'rejected') await new Promise((r) => setTimeout(r, 1000));
      }
    }),
  );
  clearInterval(sampler);
  samples.push({ t: (performance.now() - t0) / 1000, rss: procStat(s.proc.pid!).rss });
  agent.destroy();
  await stop();
  const last = samples[samples.length - 1]!;
  const minuteAgo = samples.reduce((best, x) => (Math.abs(x.t - (last.t - 60)) < Math.abs(best.t - (last.t - 60)) ? x : best), samples[0]!);
  const max = Math.max(...samples.map((x) => x.rss));
  const perMinute = samples.filter((x, i) => i === samples.length - 1 || Math.floor(x.t / 60) !== Math.floor((samples[i + 1]?.t ?? 0) / 60));
  /** The change from `a` to `b` in percent, signed ("+2.0%", "-1.5%"). */
  const change = (a: number, b: number): string => {
    const pct = ((b - a) / a) * 100;
    return `${pct >= 0 ? '+' : ''}${pct.toFixed(1)}%`;
  };
  // The plateau criterion, fixed before the runs it judges: the median of the last minute's samples
  // against the median of the minute before (about 12 samples each at 5 s), so one sample taken
  // during a garbage collection or a burst of parses neither fails nor passes a run; the two single
  // samples a minute apart are printed too. A soak shorter than 2 minutes has no minute before, and
  // says so.
  const inMinute = (from: number, to: number): number[] => samples.filter((x) => x.t > from && x.t <= to).map((x) => x.rss);
  const lastMin = median(inMinute(last.t - 60, last.t));
  const prevMin = median(inMinute(last.t - 120, last.t - 60));
  return [
    `  soak: ${CLIENTS} clients, ${SECS} s, 100 KiB messages: ${counts.completed} completed, ${counts.rejected} rejected (queue full), ${counts.failed} failed`,
    `    RSS by minute: ${perMinute.map((x) => `${(x.t / 60).toFixed(1)} min ${fmtMiB(x.rss)}`).join(', ')}`,
    `    RSS max ${fmtMiB(max)}; last minute ${fmtMiB(minuteAgo.rss)} → ${fmtMiB(last.rss)} (${change(minuteAgo.rss, last.rss)})`,
    Number.isFinite(lastMin) && Number.isFinite(prevMin)
      ? `    median RSS of the minute before the last ${fmtMiB(prevMin)} → of the last minute ${fmtMiB(lastMin)} (${change(prevMin, lastMin)}; plateau criterion: under 5%, below 300 MiB)`
      : `    median RSS by minute: not judged (a soak of ${SECS} s has no full minute before its last; the criterion needs --secs 120 or more)`,
  ];
}

async function heapLimited(): Promise<string[]> {
  const { s, url, stop } = await start({ NODE_OPTIONS: '--max-old-space-size=300' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const counts: Record<Outcome, number> = { completed: 0, rejected: 0, failed: 0 };
  let next = 0;
  let alive = true;
  s.proc.once('exit', () => {
    alive = false;
  });
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (alive && next < TASKS) {
        next++;
        let o = await send(agent, url, message());
        while (o === 'rejected' && alive) {
          counts.rejected++;
          await new Promise((r) => setTimeout(r, 1000));
          o = await send(agent, url, message());
        }
        counts[o]++;
      }
    }),
  );
  const lived = alive;
  const hwm = lived ? procStat(s.proc.pid!).hwm : 0;
  agent.destroy();
  await stop();
  return [
    `  heap limit (--max-old-space-size=300): ${TASKS} tasks of 100 KiB from 32 clients: ${counts.completed} completed, ${counts.failed} failed, ${counts.rejected} rejected then retried; process ${lived ? `alive, max RSS ${fmtMiB(hwm)}` : 'DIED'}`,
  ];
}

const lines = [
  `soak: bounded memory under load (mur serve ${IMAGE ? `as the runtime image runs it (node ${IMAGE.nodeVersion}, its ENV)` : `from ${FROM === 'dist' ? 'compiled dist/' : 'sources via tsx'} on node ${process.version}`}, real driver component, no tools, SQLite store${
    Object.keys(EXTRA_ENV).length
      ? `; env ${Object.entries(EXTRA_ENV)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
      : ''
  })`,
];
lines.push(...(await soak()));
lines.push(...(await heapLimited()));
lines.push(machineLine());
console.log(lines.join('\n'));
process.exit(0);
