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
  /**
   * The glue whose blocking WASI imports suspend the guest (JSPI) instead of blocking its thread,
   * beside `component.js` and sharing its core modules: made for a component that imports outgoing
   * HTTP (its waits are the ones worth not blocking on; suspend.ts).
   */
  suspendingGlue?: string;
}

/** The file name of the suspending glue in a cache entry. */
export const SUSPENDING_GLUE = 'component.jspi.js';

/**
 * The imports a suspending glue lets suspend: every WASI call that can wait on outgoing HTTP
 * (runtime/host/wasi-io/backend.ts answers those with a promise on the in-thread route).
 */
export const SUSPENDING_IMPORTS = [
  'wasi:io/poll#[method]pollable.block',
  'wasi:io/poll#poll',
  'wasi:io/streams#[method]input-stream.blocking-read',
  'wasi:io/streams#[method]input-stream.blocking-skip',
  'wasi:io/streams#[method]output-stream.blocking-splice',
];

/** What the transpile of one component gives: the glue and core modules by file name, and the component's imports and exports. */
export interface Generated {
  files: Record<string, Uint8Array>;
  imports: string[];
  exports: [string, string][];
  /** The suspending glue (Meta.suspendingGlue), for a component that imports outgoing HTTP. */
  suspending?: Uint8Array;
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

/**
 * The glue and core modules of a component, exactly as jco's `transpile` with GENERATE's options
 * gives them; for a component that imports outgoing HTTP, also the glue jco makes with
 * `asyncMode: jspi` for SUSPENDING_IMPORTS and every export (its core modules are the same bytes).
 */
export async function generateComponent(bytes: Uint8Array): Promise<Generated> {
  const core = await bindgen();
  // The loading's pages go before the first transpile, that transpile's compile's after it (transpile-pages.ts).
  transpilePagesGo('jco loaded');
  const g = core.generate(bytes, GENERATE);
  transpilePagesGo('first transpiled');
  const files = Object.fromEntries(g.files);
  const out: Generated = { files, imports: g.imports, exports: g.exports };
  if (g.imports.some((i) => i.replace(/@[^/]*$/, '') === 'wasi:http/outgoing-handler')) {
    const imports = suspendingImportNames(Buffer.from(files['component.js']!).toString('utf8'));
    const s = core.generate(bytes, { ...GENERATE, asyncMode: { tag: 'jspi', val: { imports, exports: ['*'] } } });
    out.suspending = s.files.find(([f]) => f === 'component.js')![1];
  }
  return out;
}

/**
 * SUSPENDING_IMPORTS with the WASI version the component imports (jco matches versioned names; the
 * version is read from the synchronous glue, which names every import it binds).
 */
function suspendingImportNames(glue: string): string[] {
  return SUSPENDING_IMPORTS.map((name) => {
    const [iface, fn] = name.split('#') as [string, string];
    const version = new RegExp(`${iface.replace('/', '\\/')}@(\\d+\\.\\d+\\.\\d+[^"'\\s#]*)`).exec(glue)?.[1];
    return version ? `${iface}@${version}#${fn}` : name;
  });
}

/** A glue as the cache keeps it: jco's debug log off, synchronous host imports called directly (glue-rewrite.ts). */
function finishGlue(content: Uint8Array): string {
  // `_debugLog` reads process.env on every call of the glue's async machinery (a C++ interceptor
  // each time); belt and braces for the non-hybrid paths of the glue, and every path of a
  // suspending glue, which uses that machinery for its exports and suspending imports.
  const js = Buffer.from(content).toString('utf8').replaceAll('if (!globalThis?.process?.env?.JCO_DEBUG) { return; }', 'return;');
  return rewriteGlue(js).js;
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
    if (file.endsWith('.js')) data = Buffer.from(finishGlue(content));
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
  if (out.suspending) {
    writeFileSync(join(tmp, SUSPENDING_GLUE), finishGlue(out.suspending));
    meta.suspendingGlue = SUSPENDING_GLUE;
  }
  writeFileSync(join(tmp, 'meta.json'), JSON.stringify(meta, null, 2));
  try {
    renameSync(tmp, dir);
  } catch {
    // Another loader won the race; its entry is identical.
    rmSync(tmp, { recursive: true, force: true });
  }
  return meta;
}
