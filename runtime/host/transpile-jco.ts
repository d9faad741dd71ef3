/**
 * The jco transpile of one component into a cache entry: the JS glue and core modules written to a
 * temporary folder and renamed into place, so a crash or a concurrent loader never leaves half an
 * entry. Runs in a child process of its own (transpile-child.ts), never in the runtime's.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ComponentLoadError } from './errors.ts';

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

export async function transpileInto(name: string, bytes: Uint8Array, dir: string): Promise<Meta> {
  const { transpile } = await import('@bytecodealliance/jco');
  let out: { files: Record<string, Uint8Array>; imports: string[]; exports: [string, string][] };
  const opts = {
    name: 'component',
    instantiation: 'async',
    // `hybrid` skips jco's per-call `process.env.JCO_DEBUG` read (35 % of a trivial call).
    importBindings: 'hybrid',
    noTypescript: true,
    // jco 1.35 hands its options to jco-transpile, whose bindgen call reads this one, not
    // `noTypescript` (its .d.ts type does not list it yet): without it every transpile also
    // generated and wrote TypeScript declarations, which nothing here reads.
    emitTypescriptDeclarations: false,
    quiet: true,
  } as const;
  try {
    out = (await transpile(bytes, opts as Parameters<typeof transpile>[1])) as unknown as typeof out;
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
      data = Buffer.from(Buffer.from(content).toString('utf8').replaceAll('if (!globalThis?.process?.env?.JCO_DEBUG) { return; }', 'return;'));
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
