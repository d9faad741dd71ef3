/**
 * Builds the component worker's module as one ES module with esbuild, preview2-shim included and
 * its I/O worker replaced by this folder's in-thread backend: the shim's `synckit/index.js` (the
 * one module that starts the I/O thread and carries its calls) resolves to ./synckit.ts. Used from
 * the TypeScript sources (runtime/host/workers.ts, cached by source hash) and by `npm run build`
 * (scripts/build-worker.ts writes dist/runtime/host/worker.js), so every way the runtime runs loads
 * the same worker.
 */
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));

/** preview2-shim's package folder (its exports map has no ./package.json: from its main entry). */
function shimRoot(): string {
  const main = createRequire(import.meta.url).resolve('@bytecodealliance/preview2-shim');
  return join(dirname(main), '..', '..');
}

export function wasiIoPlugin(): Plugin {
  const root = shimRoot();
  return {
    name: 'murmur-wasi-io',
    setup(b) {
      b.onResolve({ filter: /^@bytecodealliance\/preview2-shim\/dist\// }, (a) => ({ path: join(root, a.path.slice('@bytecodealliance/preview2-shim/'.length)) }));
      b.onResolve({ filter: /synckit[\\/]index\.js$/ }, (a) => (a.importer.startsWith(root + sep) ? { path: join(here, 'synckit.ts') } : undefined));
    },
  };
}

/** The worker module's code: one ES module, every package inside it (only Node's built-ins imported). */
export async function bundleWorker(entry: string): Promise<string> {
  // Loaded here: compiled JavaScript (the runtime image) never bundles, and its image has no esbuild.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  // build, not buildSync: esbuild runs plugins only in its asynchronous API.
  const built = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [wasiIoPlugin()],
    write: false,
    logLevel: 'error',
  });
  const code = built.outputFiles[0]!.text;
  // The bundle is plain ES modules all through: a CommonJS require() left in it would fail at run
  // time, and the shim's own synckit in it would start the I/O thread this replaces.
  if (/\b__require\(/.test(code)) throw new Error('worker bundle: a bundled module calls require(), which an ES module bundle cannot serve');
  if (!code.includes('is not available to components in this runtime')) throw new Error("worker bundle: preview2-shim's synckit module was not replaced by runtime/host/wasi-io/synckit.ts");
  return code;
}
