/**
 * The jco transpile of one component into a cache entry: the JS glue and core modules written to a
 * temporary folder and renamed into place, so a crash or a concurrent loader never leaves half an
 * entry. Runs in a child process of its own (transpile-child.ts), never in the runtime's.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ComponentLoadError } from './errors.ts';
import { rewriteGlue } from './glue-rewrite.ts';
import { transpilePagesGo } from './transpile-pages.ts';

// Resolved from this module, not from PROJECT_ROOT: compiled to dist/, PROJECT_ROOT is dist/ and
// has no node_modules beside it (the runtime image), and the version would read 'unknown'.
export const JCO_VERSION = (() => {
  try {
    const api = fileURLToPath(import.meta.resolve('@bytecodealliance/jco')); // <pkg>/dist/api.js
    return (JSON.parse(readFileSync(join(dirname(api), '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

export interface Meta {
  imports: string[];
  exports: string[];
  coreFiles: string[];
  jco: string;
}

/** What the transpile of one component gives: the glue and core modules by file name, and the component's imports and exports. */
export interface Generated {
  files: Record<string, Uint8Array>;
  imports: string[];
  exports: [string, string][];
}

interface Bindgen {
  $init: Promise<void>;
  generate(bytes: Uint8Array, opts: Record<string, unknown>): { files: [string, Uint8Array][]; imports: string[]; exports: [string, string][] };
}

/**
 * The options jco 1.35's `transpile(bytes, { name: 'component', instantiation: 'async',
 * importBindings: 'hybrid', emitTypescriptDeclarations: false })` hands its transpiler core
 * (jco-transpile's transpileBytes, field by field; with an instantiation mode jco adds no module
 * map and no WASI shims). test/host/transpile-process.test.ts checks the output against jco's own.
 */
const GENERATE = {
  name: 'component',
  map: [],
  instantiation: { tag: 'async' },
  asyncMode: undefined,
  // `hybrid` skips jco's per-call `process.env.JCO_DEBUG` read (35 % of a trivial call).
  importBindings: { tag: 'hybrid' },
  validLiftingOptimization: false,
  tracing: false,
  noComponentErrorWrapping: false,
  noNodejsCompat: false,
  // Nothing here reads TypeScript declarations.
  noTypescript: true,
  tlaCompat: false,
  base64Cutoff: 5000,
  noNamespacedExports: false,
  multiMemory: false,
  bindgenEnableWasmExnref: false,
  strict: false,
  flagsAsBigint: false,
  variantsInlineCases: false,
  useNamespaceObjects: false,
  enumValuesScreamingSnakeCase: false,
  idlImports: false,
  asmjs: false,
};

/**
 * jco's transpiler core, the bindgen component, loaded from the jco-transpile that jco itself
 * resolves, without the rest of jco's API: importing `@bytecodealliance/jco` also compiles
 * wasm-tools (2.4 MB of WebAssembly) and loads oxc-minify's native addon, which this transpile never
 * uses (measured: the transpiler process 5-15 MiB smaller, ≈ 40 ms less CPU).
 */
async function bindgen(): Promise<Bindgen> {
  const jco = fileURLToPath(import.meta.resolve('@bytecodealliance/jco'));
  const core = createRequire(jco).resolve('@bytecodealliance/jco-transpile/component');
  const m = (await import(pathToFileURL(core).href)) as Bindgen;
  await m.$init;
  return m;
}

/** The glue and core modules of a component, exactly as jco's `transpile` with GENERATE's options gives them. */
export async function generateComponent(bytes: Uint8Array): Promise<Generated> {
  const core = await bindgen();
  // The loading's pages go before the first transpile, that transpile's compile's after it (transpile-pages.ts).
  transpilePagesGo('jco loaded');
  const g = core.generate(bytes, GENERATE);
  transpilePagesGo('first transpiled');
  return { files: Object.fromEntries(g.files), imports: g.imports, exports: g.exports };
}

export async function transpileInto(name: string, bytes: Uint8Array, dir: string): Promise<Meta> {
  let out: Generated;
  try {
    out = await generateComponent(bytes);
  } catch (e) {
    throw new ComponentLoadError(
      name,
      `is not a loadable WebAssembly component: ${(e as Error).message}`,
      'build it for wasm32-wasip2 / the component model (a core module is not enough)',
      e,
    );
  }
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp, { recursive: true });
  const coreFiles: string[] = [];
  for (const [file, content] of Object.entries(out.files)) {
    let data = content;
    if (file.endsWith('.js')) {
      // Belt and braces for the non-hybrid paths of the glue.
      const js = Buffer.from(content).toString('utf8').replaceAll('if (!globalThis?.process?.env?.JCO_DEBUG) { return; }', 'return;');
      // Synchronous host imports called without jco's async-task bookkeeping (glue-rewrite.ts).
      data = Buffer.from(rewriteGlue(js).js);
    }
    if (file.endsWith('.wasm')) coreFiles.push(file);
    mkdirSync(join(tmp, file, '..'), { recursive: true });
    writeFileSync(join(tmp, file), data);
  }
  // The glue is ESM; make sure Node reads it as such wherever the cache lives.
  writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
  const meta: Meta = {
    imports: out.imports.map((i) => i.replace(/@[^/]*$/, '')),
    exports: out.exports.map(([n]) => n),
    coreFiles: coreFiles.sort(),
    jco: JCO_VERSION,
  };
  writeFileSync(join(tmp, 'meta.json'), JSON.stringify(meta, null, 2));
  try {
    renameSync(tmp, dir);
  } catch {
    // Another loader won the race; its entry is identical.
    rmSync(tmp, { recursive: true, force: true });
  }
  return meta;
}
