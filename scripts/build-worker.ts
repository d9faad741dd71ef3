/**
 * `npm run build`, after tsc: replaces dist/runtime/host/worker.js and inline-wasi.js (tsc's
 * file-by-file output) with their bundles — preview2-shim inside each, its I/O worker replaced by
 * the in-thread backend (runtime/host/wasi-io/bundle.ts) — the modules the runtime loads from the
 * sources too (runtime/host/bundled-module.ts): the component worker, and the WASI of a component
 * run on the main thread (runtime/host/inline.ts).
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bundleWorker } from '../runtime/host/wasi-io/bundle.ts';

const ROOT = resolve(import.meta.dirname, '..');
for (const name of ['worker', 'inline-wasi']) {
  const t0 = performance.now();
  const out = join(ROOT, `dist/runtime/host/${name}.js`);
  writeFileSync(out, await bundleWorker(join(ROOT, `runtime/host/${name}.ts`)));
  console.log(`build-worker: ${out} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
}
