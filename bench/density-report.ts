/** The figures of bench/density.ts: wake statistics (bench/stats.ts), the JSON summary and its printout. */
import type { AwakeMemory, ProcessRss } from './density-memory.ts';
import { median, percentile, table } from './stats.ts';

/** One line of the client (density-client.mjs): a wake, timed in the cluster. */
export interface Wake {
  kind: 'sequential' | 'concurrent';
  url: string;
  ms: number;
  status?: number;
  state?: string;
  error?: string;
}

export interface WakeStats {
  n: number;
  /** wakes whose answer was a task in state `completed`; the figures are over these */
  completed: number;
  p50Ms?: number;
  p99Ms?: number;
  minMs?: number;
  maxMs?: number;
  /** every wake in order: ms, and what went wrong for those not completed */
  wakes: { url: string; ms: number; state?: string; status?: number; error?: string }[];
}

export interface Summary {
  date: string;
  commit: string;
  node: string;
  capsules: number;
  wave: number;
  idle: string;
  /** 1/5/15-minute load averages of the machine */
  load: { start: number[]; atWakes: number[]; end: number[] };
  /** from the first apply: the last wave applied, and every Capsule Sleeping */
  allAppliedS: number;
  allSleepingS: number;
  /** …and every capsule pod deleted (the wakes start after this) */
  noPodsS: number;
  waves: { wave: number; capsules: number; appliedAtS: number; sleepingAtS: number; applyToSleepingS: number }[];
  sequential: WakeStats;
  concurrent: WakeStats;
  /** the concurrently woken Capsules, read right after the last of them answered */
  awake: AwakeMemory[];
  /** how many of the woken Capsules have a WakeRequested Event from the activator (all should) */
  activatorWoke: number;
  rss: { asleep: ProcessRss; afterWakes: ProcessRss };
  wallS: number;
}

export function wakeStats(wakes: Wake[]): WakeStats {
  const ok = wakes.filter((w) => w.state === 'completed').map((w) => w.ms);
  return {
    n: wakes.length,
    completed: ok.length,
    ...(ok.length ? { p50Ms: median(ok), p99Ms: percentile(ok, 99), minMs: Math.min(...ok), maxMs: Math.max(...ok) } : {}),
    wakes: wakes.map(({ url, ms, state, status, error }) => ({ url, ms: Math.round(ms), state, status, error })),
  };
}

const s = (ms: number | undefined): string => (ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(2)} s`);
const mib = (b: number | undefined): string => (b === undefined ? 'n/a' : `${(b / 2 ** 20).toFixed(1)} MiB`);

/** median and max of a figure over the awake Capsules that have it */
function spread(xs: (number | undefined)[]): string {
  const v = xs.filter((x): x is number => x !== undefined);
  return v.length ? `${mib(median(v))} (max ${mib(Math.max(...v))}, n ${v.length})` : 'n/a';
}

function wakeRow(name: string, w: WakeStats): [string, string, string] {
  const failed = w.n - w.completed;
  return [
    name,
    `p50 ${s(w.p50Ms)}`,
    `p99 ${s(w.p99Ms)}, min ${s(w.minMs)}, max ${s(w.maxMs)}; ${w.completed}/${w.n} completed${failed ? ` (${failed} NOT: see the JSON)` : ''}`,
  ];
}

export function printSummary(r: Summary): string {
  const failures = [...r.sequential.wakes, ...r.concurrent.wakes].filter((w) => w.state !== 'completed');
  return [
    `density: ${r.capsules} capsules on node ${r.node} (waves of ${r.wave}, afterIdle ${r.idle}), commit ${r.commit}`,
    table([
      ['load average at start / wakes / end', `${r.load.start.join(' ')}`, `/ ${r.load.atWakes.join(' ')} / ${r.load.end.join(' ')}`],
      ['all applied', s(r.allAppliedS * 1000), 'from the first apply (each wave waits for the last to sleep)'],
      ['all Sleeping', s(r.allSleepingS * 1000), `waves apply → Sleeping: ${r.waves.map((w) => w.applyToSleepingS.toFixed(0)).join(', ')} s`],
      ['all their pods gone', s(r.noPodsS * 1000)],
      wakeRow(`wake, ${r.sequential.n} one after another`, r.sequential),
      wakeRow(`wake, ${r.concurrent.n} at once`, r.concurrent),
      ['woken through the activator', `${r.activatorWoke}/${r.sequential.n + r.concurrent.n}`, 'capsules with a WakeRequested Event'],
      ['awake capsule: PSS of mur serve', spread(r.awake.map((a) => a.pssBytes)), 'median over the concurrently woken'],
      ['awake capsule: pod cgroup usage', spread(r.awake.map((a) => a.cgroupUsageBytes)), 'memory.usage_in_bytes (page cache included)'],
      ['awake capsule: pod cgroup RSS', spread(r.awake.map((a) => a.cgroupRssBytes)), 'memory.stat total_rss'],
      ['operator RSS', mib(r.rss.asleep.operator), `with ${r.capsules} asleep; ${mib(r.rss.afterWakes.operator)} after the wakes`],
      ['activator RSS', mib(r.rss.asleep.activator), `with ${r.capsules} asleep; ${mib(r.rss.afterWakes.activator)} after the wakes`],
      ['wall', s(r.wallS * 1000)],
    ]),
    ...failures.slice(0, 10).map((f) => `  not completed: ${f.url} after ${s(f.ms)}: ${f.status ?? ''} ${f.state ?? ''} ${f.error ?? ''}`),
  ].join('\n');
}
