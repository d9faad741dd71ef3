/**
 * One temp folder per bench process, removed when it exits. A bench makes dozens of temp dirs a
 * round — registries, capsules, workdirs, transpile caches, the provider's script (test/loop/kit.ts
 * `tmp`) — and a bench run as a script (`node --import tsx bench/reference.ts`, as the docs show)
 * left every one of them in the system's temp dir: hundreds after a day of rounds. Imported first
 * by every bench entry (bench/run.ts too): TMPDIR points at a folder of this process's own under
 * the temp dir it was given, which `os.tmpdir()` (so `tmp`) and the children (the serving
 * processes, the provider) then use, and which goes at exit — also on Ctrl-C or SIGTERM, which
 * would otherwise end the process without its `exit` handlers. A bench started by bench/run.ts
 * makes its folder inside run.ts's: each removes its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The folder this process's temp dirs go under (TMPDIR from now on). */
export const BENCH_TMP = mkdtempSync(join(tmpdir(), 'capsule-bench-'));
process.env.TMPDIR = BENCH_TMP;
process.once('exit', () => rmSync(BENCH_TMP, { recursive: true, force: true }));
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  // Only when nothing else handles it: a bench that stops its arms on a signal exits itself.
  process.once(signal, () => {
    if (process.listenerCount(signal) === 0) process.exit(code);
  });
}
