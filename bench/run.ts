/**
 * `npm run bench [name ...]`: runs the benches one after another and prints their figures. Every
 * comparison runs its arms alternating round by round in the same run and prints min / median /
 * max of each arm and of the paired ratio (bench/paired.ts; these machines are noisy, absolute
 * times are not comparable between runs). `stack` — the whole stack, `mur serve` with real
 * components — is the headline and runs first. `reference` runs this runtime and the reference
 * runtime (Murmur) side by side on the reference's own components (bench/reference.ts); `warmup`,
 * named only, the same two window by window from a start (bench/warmup.ts).
 * `density` (bench/density.ts: Capsules asleep and woken on the real node; Linux, root, long) runs
 * only when named. Flags after a bench's name go to that bench: `npm run bench -- density --capsules 30`.
 */
import './tmp-root.ts'; // first: every temp dir of the run (the child benches inherit TMPDIR) under one folder, removed at exit
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchComponents } from './components.ts';
import { benchLoop } from './loop.ts';
import { benchScript } from './script.ts';
import { benchTokens } from './tokens.ts';
import { benchHealthzCount } from './healthz-count.ts';
import { benchStore } from './store.ts';
import { benchReplicaBus } from './replica-bus.ts';

const inProcess: Record<string, () => Promise<string>> = {
  components: benchComponents,
  loop: () => benchLoop(),
  script: () => benchScript(),
  tokens: () => benchTokens(),
  'healthz-count': () => benchHealthzCount(),
  store: () => benchStore(),
  'replica-bus': () => benchReplicaBus(),
};
// These run as their own processes (each starts servers or a cluster and exits when done).
const scripts = ['stack', 'a2a', 'hooks', 'polling', 'telemetry', 'operator', 'images', 'soak', 'reference', 'warmup', 'density', 'task-cpu'];
// `reference` compares with the reference runtime built outside this repository: in the default
// run only when MURMUR_REFERENCE_BIN and MURMUR_REFERENCE_FIXTURES say where it is (named, it runs
// and fails saying what to set).
const haveReference = !!(process.env.MURMUR_REFERENCE_BIN && process.env.MURMUR_REFERENCE_FIXTURES);
const namedOnly = ['density', 'task-cpu', 'warmup'];
const defaults = [
  'stack',
  ...Object.keys(inProcess),
  ...scripts.filter((n) => n !== 'stack' && !namedOnly.includes(n) && (n !== 'reference' || haveReference)),
];
if (!process.argv.slice(2).length && !haveReference)
  console.log('(reference: not in this run: set MURMUR_REFERENCE_BIN and MURMUR_REFERENCE_FIXTURES, see bench/reference.ts)\n');
/** The benches named, each with the flags after its name: a `--flag` and the value right after it (a word that names no bench). */
function namedBenches(argv: string[]): { name: string; args: string[] }[] {
  const out: { name: string; args: string[] }[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const known = a in inProcess || scripts.includes(a);
    const isValue = !known && !a.startsWith('--') && argv[i - 1]?.startsWith('--') && !argv[i - 1]!.includes('=');
    if (out.length && (a.startsWith('--') || isValue)) out[out.length - 1]!.args.push(a);
    else out.push({ name: a, args: [] });
  }
  return out;
}
const named = process.argv.slice(2).length ? namedBenches(process.argv.slice(2)) : defaults.map((name) => ({ name, args: [] }));
let failed = 0;
for (const { name: n, args } of named) {
  const t = performance.now();
  if (inProcess[n] && args.length) {
    console.log(`${n}: takes no flags (got ${args.join(' ')})`);
    failed++;
  } else if (inProcess[n]) {
    console.log(await inProcess[n]());
  } else if (scripts.includes(n)) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(`./${n}.ts`, import.meta.url)), ...args], { stdio: 'inherit' });
    if (r.status !== 0) {
      failed++;
      console.log(`${n}: exited ${r.status}`);
    }
  } else {
    console.log(`unknown bench '${n}' (known: ${[...Object.keys(inProcess), ...scripts].join(', ')})`);
    failed++;
  }
  console.log(`  (${n}: ${((performance.now() - t) / 1000).toFixed(1)} s)\n`);
}
process.exit(failed ? 1 : 0);
