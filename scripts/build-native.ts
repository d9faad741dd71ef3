/**
 * Builds the runtime's one native addon, runtime/native/memory.node (runtime/memory.ts: returning
 * freed memory to the kernel when the runtime goes idle; runtime/process-guard.ts: the runtime's
 * secrets kept out of its /proc files and of reach of its children's capabilities), from
 * runtime/native/memory.c, guard.c, caps.c and exe.c with the C
 * compiler against the running Node's own Node-API headers (<prefix>/include/node, shipped with
 * every Node install: no download). Node-API is ABI-stable, so the one build loads on Node 20 and 24.
 * With `--dist`, also copies it into dist/runtime/native/ (npm run build).
 *
 * Rebuilt only when a source is newer than the addon. Without a compiler or the headers it says so
 * and exits 0: the runtime runs without the addon (it keeps freed memory resident, and its start-up
 * secrets readable in /proc/<pid>/environ, which `mur` warns of), and test/host/memory-release.test.ts
 * and test/security/serve-environ.test.ts fail saying what is missing. CC picks the compiler (default cc).
 *
 *   node --import tsx scripts/build-native.ts [--dist]
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const SRCS = ['memory.c', 'guard.c', 'caps.c', 'exe.c'].map((f) => join(ROOT, 'runtime/native', f));
const OUT = join(ROOT, 'runtime/native/memory.node');
const DIST = join(ROOT, 'dist/runtime/native/memory.node');
const t0 = performance.now();
const took = (): string => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

function build(): string | undefined {
  if (existsSync(OUT) && SRCS.every((src) => statSync(OUT).mtimeMs >= statSync(src).mtimeMs)) return undefined;
  const include = join(dirname(process.execPath), '..', 'include', 'node');
  if (!existsSync(join(include, 'node_api.h'))) return `no Node-API headers at ${include} (they come with a Node install)`;
  const cc = process.env.CC ?? 'cc';
  const r = spawnSync(cc, ['-O2', '-shared', '-fPIC', `-I${include}`, '-o', `${OUT}.tmp`, ...SRCS], { encoding: 'utf8' });
  // No compiler but a build of the addon already here (an image's build stage copies in the one it
  // compiled where a compiler is): keep that.
  if (r.error && existsSync(OUT)) return undefined;
  if (r.error) return `no C compiler (${cc}: ${r.error.message}); install one (Debian: apt-get install gcc) or set CC`;
  if (r.status !== 0) return `${cc} failed (exit ${r.status}):\n${r.stderr.trim()}`;
  // Renamed into place: a process loading the addon meanwhile never sees half a file.
  renameSync(`${OUT}.tmp`, OUT);
  return undefined;
}

const problem = build();
if (problem) {
  console.log(
    `build-native: runtime/native/memory.node not built: ${problem}. The runtime runs without it, but freed memory stays resident while idle and the secrets it was started with stay readable in its /proc/<pid>/environ and cmdline (mur says so at start).`,
  );
} else {
  if (process.argv.includes('--dist')) {
    mkdirSync(dirname(DIST), { recursive: true });
    copyFileSync(OUT, DIST);
  }
  console.log(`build-native: ${OUT}${process.argv.includes('--dist') ? ` (and ${DIST})` : ''} (${took()})`);
}
