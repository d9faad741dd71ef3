/**
 * A first run's transpiles done in this process, before it loads anything else: `mur serve` and
 * `mur run` call {@link transpileAhead} right after staging, before they import the server, the
 * store, the agent loop or the script host, and no component has run yet.
 *
 * Why: a transpile in its own process (transpile-child-run.ts) costs a second node process beside
 * the serving one — measured on Node 20, the serving process at 85–90 MiB (its modules loaded)
 * plus the transpiler process's 90–98 MiB (≈ 41 MiB of them the node binary's pages, counted in
 * each process's RSS), a first run's tree peaking at ≈ 180 MiB. Here the process is ≈ 55 MiB when
 * the transpile starts, the transpiler adds ≈ 50 MiB in a worker thread, and what the worker freed
 * goes back to the kernel (runtime/memory.ts) before the serving modules load.
 *
 * The catch is V8's tiering: under its default one, compiling jco's transpiler's hot functions
 * with TurboFan costs more than it saves (0.7–0.8 s of CPU and 170 MiB for the reference's driver
 * and echo tool, against 0.25 s and 92 MiB with Liftoff only), and V8's flags are process-wide and
 * read when a function tiers up, not when its module compiles. So tier-up is switched off for the
 * whole transpile (`--no-wasm-dynamic-tiering --no-wasm-tier-up`, what `--liftoff-only` implies;
 * Node 24's V8 ignores `--liftoff-only` itself when set at run time) and switched back on once the
 * worker has ended (`--liftoff-only` set and unset would leave its implications behind: no later
 * module tiered up). That is only sound while nothing else in the process runs WebAssembly, which
 * is why this runs before anything else does; a component transpiled later (an artifact pulled by a
 * running session, a test) still goes to the transpiler process, whose flags are its own.
 *
 * Best effort: a component that cannot be read, whose bytes do not match its pin, or that the
 * transpiler refuses is left out of the cache, and its load (transpile-cache.ts) reports it exactly
 * as it would have without this step.
 */
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { releaseFreedMemory } from '../memory.ts';
import { readDigested, type FileIdentity } from './file-digest.ts';
import { cacheEntryDir, cached, cachedUnchanged, defaultCacheDir } from './transpile-cache.ts';
import type { TranspileJob } from './transpile-jobs.ts';
import type { PageStep } from './transpile-pages.ts';

// The worker boot shared with the component host's and the token counter's workers: from the
// TypeScript sources it registers tsx first.
const BOOT = fileURLToPath(new URL('../worker-boot.mjs', import.meta.url));
const ENTRY = new URL(import.meta.url.endsWith('.ts') ? './transpile-worker.ts' : './transpile-worker.js', import.meta.url).href;

/** Tier-up off (Liftoff only) while the transpile runs, and the defaults restored after it. */
export const TIER_UP_OFF = ['--no-wasm-dynamic-tiering', '--no-wasm-tier-up'];
const TIER_UP_ON = ['--wasm-dynamic-tiering', '--wasm-tier-up'];
/** The process's own tiering flags (node's command line), applied again over the defaults. */
const TIERING_FLAG = /^--(no-)?(wasm-dynamic-tiering|wasm-tier-up|liftoff|liftoff-only)(=|$)/;

export interface AheadComponent {
  name: string;
  path: string;
  /** The digest its load will be pinned to: bytes that do not match are left to that load to refuse. */
  sha256?: string;
  /** The file's identity when its pin was verified: unchanged and cached, it is not read again (loadComponent's rule). */
  unchangedSince?: FileIdentity;
}

export interface AheadResult {
  /** Components transpiled into the cache now. */
  transpiled: string[];
  /** Components the transpiler refused (their load reports why). */
  refused: string[];
}

/**
 * Transpiles into the cache every component of `components` not already there (seeds included,
 * unless `cacheDir` is given, as loadComponent reads them), in a worker thread of this process.
 * Only while nothing else in the process compiles or runs WebAssembly (see above). Never rejects.
 */
export async function transpileAhead(components: readonly AheadComponent[], opts: { cacheDir?: string } = {}): Promise<AheadResult> {
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const jobs: TranspileJob[] = [];
  const seen = new Set<string>();
  const explicit = opts.cacheDir !== undefined;
  for (const c of components) {
    const pin = c.sha256?.toLowerCase().replace(/^sha256:/, '');
    // A warm start reads and hashes nothing here (a built-in driver is 12 MB), as loadComponent does not.
    if (cachedUnchanged(c.name, c.path, pin, c.unchangedSince, cacheDir, explicit)) continue;
    let bytes: Uint8Array;
    let sha: string;
    // The digest is remembered for the file as it is: its load right after does not hash it again (file-digest.ts).
    try {
      ({ bytes, sha256: sha } = readDigested(c.path));
    } catch {
      continue;
    }
    if ((pin && pin !== sha) || seen.has(sha) || cached(c.name, sha, cacheDir, explicit)) continue;
    seen.add(sha);
    jobs.push({ name: c.name, bytes, dir: cacheEntryDir(sha, cacheDir) });
  }
  const result: AheadResult = { transpiled: [], refused: [] };
  if (jobs.length === 0) return result;
  for (const f of TIER_UP_OFF) setFlagsFromString(f);
  try {
    const replies = await runTranspileWorker(jobs);
    for (const [i, job] of jobs.entries()) {
      const r = replies.get(i);
      if (r?.meta) result.transpiled.push(job.name);
      else if (r) result.refused.push(job.name);
    }
  } finally {
    for (const f of [...TIER_UP_ON, ...process.execArgv.filter((a) => TIERING_FLAG.test(a.replace(/_/g, '-')))]) setFlagsFromString(f);
  }
  // The worker's isolate, the transpiler's memory and the malloc arena it used are freed: give
  // them back before the serving modules load on top.
  releaseFreedMemory(['transpiler']);
  return result;
}

type Reply = { i: number; meta?: unknown; error?: string };

let lastPages: PageStep[] = [];

/** The binary's page releases the last transpile worker made (transpile-pages.ts; tests, measurements). */
export function aheadPageSteps(): PageStep[] {
  return lastPages.map((s) => ({ ...s }));
}

/**
 * Runs the worker over `jobs` until it has answered them all, or ended without (a job it never
 * answered is simply not cached). Its environment is empty, as the transpiler process's is: the
 * runtime's secrets never reach the transpiler. `entry`: the worker's module (tests).
 */
export async function runTranspileWorker(jobs: TranspileJob[], entry = ENTRY): Promise<Map<number, Reply>> {
  const replies = new Map<number, Reply>();
  const w = new Worker(BOOT, {
    workerData: { entry, jobs },
    env: {},
    // No loaders or V8 options of the parent (a worker refuses the latter): worker-boot registers tsx itself.
    execArgv: [],
    // What a library prints is not the runtime's output.
    stdout: true,
    stderr: true,
  });
  w.stdout.resume();
  w.stderr.resume();
  await new Promise<void>((resolve) => {
    w.on('message', (m: Reply & { done?: boolean; pages?: PageStep[] }) => {
      if (!m.done) replies.set(m.i, m);
      else {
        lastPages = m.pages ?? [];
        resolve();
      }
    });
    w.on('error', () => resolve());
    w.on('exit', () => resolve());
  });
  await w.terminate();
  return replies;
}
