/**
 * Paired comparisons for benches: every arm runs once per round, the arms alternating (the order
 * reverses every other round, so neither arm always runs first on a warm or a cold machine), and
 * the report gives min / median / max of each arm and of the per-round ratio against the baseline
 * arm. Never best against best: on a shared 2-core machine one round of an arm can be 40% of the
 * other and the next 110%, and only the paired ratio over many rounds says which is faster.
 */
import { loadavg, uptime } from 'node:os';

export interface Spread {
  min: number;
  median: number;
  max: number;
}

export function spread(xs: number[]): Spread {
  if (!xs.length) return { min: NaN, median: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return { min: s[0]!, median: s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2, max: s[s.length - 1]! };
}

export interface Arm {
  name: string;
  /** One round of this arm: returns its figure for the round (a time, a rate, a size). */
  run(round: number): Promise<number> | number;
}

export interface PairedResult {
  arms: { name: string; samples: number[]; spread: Spread }[];
  /** Per arm (other than the baseline): the round-by-round ratio arm / baseline. */
  ratios: { name: string; samples: number[]; spread: Spread }[];
}

/** Runs `rounds` rounds of all arms, alternating them; the first arm is the baseline of the ratios. */
export async function paired(arms: Arm[], rounds: number): Promise<PairedResult> {
  const samples = arms.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    const order = arms.map((_, i) => i);
    if (r % 2) order.reverse();
    for (const i of order) samples[i]!.push(await arms[i]!.run(r));
  }
  return summarize(
    arms.map((a) => a.name),
    samples,
  );
}

/**
 * Runs `rounds` rounds of the arms alternating as `paired` does, keeping what each arm's round
 * returns: arm name → its records in round order, for a bench whose one round yields several
 * figures (each later paired with `summarize`).
 */
export async function pairedRecords<T>(arms: { name: string; run(round: number): Promise<T> }[], rounds: number): Promise<Map<string, T[]>> {
  const out = new Map<string, T[]>(arms.map((a) => [a.name, []]));
  await paired(
    arms.map((a) => ({
      name: a.name,
      run: async (r: number) => {
        out.get(a.name)!.push(await a.run(r));
        return 0;
      },
    })),
    rounds,
  );
  return out;
}

/**
 * Summarizes figures recorded round by round (samples[arm][round], every arm measured in every
 * round, alternating): a bench whose one round yields several figures records them and pairs each.
 */
export function summarize(names: string[], samples: number[][]): PairedResult {
  return {
    arms: names.map((name, i) => ({ name, samples: samples[i]!, spread: spread(samples[i]!) })),
    ratios: names.slice(1).map((name, j) => {
      const xs = samples[j + 1]!.map((v, r) => v / samples[0]![r]!);
      return { name, samples: xs, spread: spread(xs) };
    }),
  };
}

export type Fmt = (v: number) => string;

export const fmtTime: Fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : ms < 1000 ? `${ms.toFixed(2)} ms` : `${(ms / 1000).toFixed(2)} s`);
export const fmtRate =
  (unit: string): Fmt =>
  (v) =>
    `${v.toFixed(0)} ${unit}`;
export const fmtMiB: Fmt = (b) => `${(b / 1048576).toFixed(1)} MiB`;
export const fmtRatio: Fmt = (x) => `×${x.toFixed(3)}`;

/** `median (min – max)` of a spread. */
export function fmtSpread(s: Spread, f: Fmt): string {
  return `${f(s.median)} (${f(s.min)} – ${f(s.max)})`;
}

/** Table rows for a paired result: each arm, then each ratio against the baseline. */
export function pairedRows(res: PairedResult, f: Fmt): [string, string, string?][] {
  const rows: [string, string, string?][] = res.arms.map((a) => [a.name, fmtSpread(a.spread, f), `n=${a.samples.length}`]);
  // Arms named "<what>, <arm>" share their prefix: the ratio row names only the arms.
  const names = res.arms.map((a) => a.name);
  let p = 0;
  while (names.every((n) => n[p] === names[0]![p]) && p < names[0]!.length) p++;
  const cut = names[0]!.lastIndexOf(', ', p) + 2 || 0;
  const short = (n: string) => (cut > 1 ? n.slice(cut) : n);
  for (const r of res.ratios) rows.push([`  ratio ${short(r.name)} / ${short(res.arms[0]!.name)}`, fmtSpread(r.spread, fmtRatio), 'paired by round']);
  return rows;
}

export function table(rows: [string, string, string?][]): string {
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  return rows.map(([a, b, c]) => `  ${a.padEnd(w0)}  ${b.padStart(w1)}${c ? `  ${c}` : ''}`).join('\n');
}

/** One line saying how loaded the machine was while the bench ran (figures on a busy box drift). */
export function machineLine(): string {
  const [a, b, c] = loadavg();
  return `  (median (min – max); load average ${a!.toFixed(2)} ${b!.toFixed(2)} ${c!.toFixed(2)}, up ${(uptime() / 60).toFixed(0)} min, node ${process.version})`;
}

/**
 * A numeric `--name value` option of a bench's command line, or `def`. A value that is not a
 * positive number stops the bench saying which option and what it got.
 */
export function numArg(name: string, def: number, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = Number(argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) {
    console.error(`--${name}: expected a positive number, got ${argv[i + 1] === undefined ? 'nothing' : `'${argv[i + 1]}'`}`);
    process.exit(2);
  }
  return v;
}

/**
 * A count option (`--name N`, a whole number, 0 allowed: `--steady 0` skips the steady window,
 * `--load 0` runs no load), or `def`. Anything else stops the bench saying which option and what it got.
 */
export function countArg(name: string, def: number, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = Number(argv[i + 1]);
  if (!Number.isInteger(v) || v < 0 || argv[i + 1]?.trim() === '') {
    console.error(`--${name}: expected a whole number ≥ 0, got ${argv[i + 1] === undefined ? 'nothing' : `'${argv[i + 1]}'`}`);
    process.exit(2);
  }
  return v;
}

/**
 * A `--name value` option of a bench's command line that takes one of `choices`, or `def`. Any
 * other value stops the bench saying which option, what it takes and what it got.
 */
export function choiceArg<T extends string>(name: string, choices: readonly T[], def: T, argv: readonly string[] = process.argv): T {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = argv[i + 1];
  if (!choices.includes(v as T)) {
    console.error(`--${name}: expected ${choices.join(', ')}, got ${v === undefined ? 'nothing' : `'${v}'`}`);
    process.exit(2);
  }
  return v as T;
}
