/**
 * Builds the component worker's module as one ES module with esbuild, preview2-shim included and
 * its I/O worker replaced by this folder's in-thread backend: the shim's `synckit/index.js` (the
 * one module that starts the I/O thread and carries its calls) resolves to ./synckit.ts. Used from
 * the TypeScript sources (runtime/host/workers.ts, cached by source hash) and by `npm run build`
 * (scripts/build-worker.ts writes dist/runtime/host/worker.js), so every way the runtime runs loads
 * the same worker.
 */
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));

/** preview2-shim's package folder (its exports map has no ./package.json: from its main entry). */
function shimRoot(): string {
  const main = createRequire(import.meta.url).resolve('@bytecodealliance/preview2-shim');
  return join(dirname(main), '..', '..');
}

/**
 * Built-ins whose exports are plain functions and values (none reads `this`), taken as an object
 * whose prototype is the module. esbuild's interop (`__toESM`) gives every bundled module that
 * imports a CommonJS module an object of its own with one getter per own export: node:fs has 108,
 * node:crypto 77, and the serve chunk imports them from dozens of modules, ≈ 6 500 getter closures
 * and their contexts, 0.8 MiB of a serving process's main heap. With the module as prototype
 * there is nothing to copy, and every read goes through to the module itself. Not for process,
 * events, streams or worker_threads: their methods run on `this`.
 */
const READ_THROUGH = /^node:(fs|fs\/promises|path|crypto|url|os)$/;

/**
 * Every Node built-in the bundle imports, taken with `process.getBuiltinModule` (the CommonJS
 * exports object) instead of an ES `import`. Why: an ES import of a built-in builds a module
 * namespace of all its exports, which on Node 24 runs every lazy getter: `import * as http` (the
 * shim's, for two header validators) loads undici, http2, tls, zlib and assert — 113 internal
 * modules against 41 — and cost each component worker 6 MiB of RSS (18.3 against 12.3 MiB a
 * worker, measured on Node 24.22; Node 20 differs by 0.1 MiB). esbuild's CommonJS interop reads
 * properties on use, so nothing lazy runs until a component needs it.
 */
export function lazyBuiltinsPlugin(): Plugin {
  const names = builtinModules.filter((m) => !m.startsWith('_')).map((m) => m.replace(/[/\\]/g, '\\$&'));
  const filter = new RegExp(`^(node:)?(${names.join('|')})$`);
  return {
    name: 'murmur-lazy-builtins',
    setup(b) {
      // A dynamic import() stays Node's own: it is lazy already, and a split bundle would give it
      // only a default export (esbuild's CommonJS interop), where Node's has the named ones too
      // (OpenTelemetry's `const { Agent } = await import('http')` got undefined).
      b.onResolve({ filter }, (a) =>
        a.kind === 'dynamic-import' ? undefined : { path: a.path.startsWith('node:') ? a.path : `node:${a.path}`, namespace: 'murmur-builtin' },
      );
      b.onLoad({ filter: /.*/, namespace: 'murmur-builtin' }, (a) => ({
        contents: READ_THROUGH.test(a.path)
          ? `module.exports = Object.create(process.getBuiltinModule(${JSON.stringify(a.path)}));`
          : `module.exports = process.getBuiltinModule(${JSON.stringify(a.path)});`,
        loader: 'js',
      }));
    },
  };
}

export function wasiIoPlugin(): Plugin {
  const root = shimRoot();
  return {
    name: 'murmur-wasi-io',
    setup(b) {
      b.onResolve({ filter: /^@bytecodealliance\/preview2-shim\/dist\// }, (a) => ({
        path: join(root, a.path.slice('@bytecodealliance/preview2-shim/'.length)),
      }));
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
    // Comments and whitespace out, so the source V8 keeps in every worker's heap is ASCII (one
    // byte per character, not two for a stray dash) and smaller; names stay for stacks.
    minifyWhitespace: true,
    plugins: [wasiIoPlugin(), lazyBuiltinsPlugin()],
    write: false,
    logLevel: 'error',
  });
  const code = built.outputFiles[0]!.text;
  // The bundle is plain ES modules all through: a CommonJS require() left in it would fail at run
  // time, and the shim's own synckit in it would start the I/O thread this replaces.
  // (esbuild's own CommonJS wrapper is a function named __require too: its declaration is no call.)
  if (/(?<!function )\b__require\(/.test(code)) throw new Error('worker bundle: a bundled module calls require(), which an ES module bundle cannot serve');
  if (!code.includes('is not available to components in this runtime'))
    throw new Error("worker bundle: preview2-shim's synckit module was not replaced by runtime/host/wasi-io/synckit.ts");
  return code;
}
