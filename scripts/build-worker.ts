/**
 * `npm run build`, after tsc: replaces dist/runtime/host/worker.js (tsc's file-by-file output) with
 * the component worker bundle — preview2-shim inside it, its I/O worker replaced by the in-thread
 * backend (runtime/host/wasi-io/bundle.ts) — the module the runtime loads from the sources too.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bundleWorker } from '../runtime/host/wasi-io/bundle.ts';

const ROOT = resolve(import.meta.dirname, '..');
const t0 = performance.now();
const out = join(ROOT, 'dist/runtime/host/worker.js');
writeFileSync(out, await bundleWorker(join(ROOT, 'runtime/host/worker.ts')));
console.log(`build-worker: ${out} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
