/**
 * The component worker's bundle (runtime/host/wasi-io/bundle.ts): preview2-shim inside it with its
 * I/O thread replaced, and every Node built-in taken through process.getBuiltinModule, since an ES
 * import of one builds its whole namespace (on Node 24 `node:http` then loads undici, http2, tls,
 * zlib: 6 MiB in every worker; the runtime image's own test checks what its Node loads).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleWorker, lazyBuiltinsPlugin } from '../../runtime/host/wasi-io/bundle.ts';

const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');

const ENTRY = fileURLToPath(new URL('../../runtime/host/worker.ts', import.meta.url));
/** Bundled once for the tests below (each reads the same output). */
let bundled: Promise<string> | undefined;
const workerBundle = (): Promise<string> => (bundled ??= bundleWorker(ENTRY));

describe('the component worker bundle', () => {
  it('imports no Node built-in as an ES module: each comes through process.getBuiltinModule', async () => {
    const code = await workerBundle();
    expect(code.match(/(?:from|import)\s*\(?\s*["'](?:node:)?[a-z_/]+["']/g) ?? []).toEqual([]);
    const taken = [...code.matchAll(/process\.getBuiltinModule\("([^"]+)"\)/g)].map((m) => m[1]).sort();
    expect(taken).toEqual(expect.arrayContaining(['node:fs', 'node:http', 'node:worker_threads']));
  });

  it('is ASCII without comments, so V8 keeps its source at one byte per character in every worker', async () => {
    const code = await workerBundle();
    const wide = [...code].findIndex((c) => c.charCodeAt(0) > 0x7f);
    expect(wide === -1 ? '' : code.slice(Math.max(0, wide - 40), wide + 5)).toBe('');
    expect(code).not.toMatch(/\/\*\*|^\s*\/\/ /m);
  });
});

describe('built-ins in a split bundle (the image bundles main.js split at its dynamic imports)', () => {
  it("keeps a dynamically imported built-in's named exports, and takes static ones lazily", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'split-builtins-'));
    writeFileSync(
      join(dir, 'entry.mjs'),
      [
        "import { createHash } from 'node:crypto';",
        "const { Agent } = await import('http');",
        "console.log(JSON.stringify({ agent: typeof Agent, hash: createHash('sha256').update('x').digest('hex').slice(0, 8) }));",
      ].join('\n'),
    );
    await esbuild.build({
      entryPoints: [join(dir, 'entry.mjs')],
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      outdir: join(dir, 'out'),
      plugins: [lazyBuiltinsPlugin()],
      logLevel: 'silent',
    });
    const out = JSON.parse(execFileSync(process.execPath, [join(dir, 'out', 'entry.js')], { encoding: 'utf8' })) as { agent: string; hash: string };
    expect(out).toEqual({ agent: 'function', hash: '2d711642' });
  });

  it("copies none of node:fs's, node:path's or node:crypto's exports into each importing module: reads go through to the module", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'read-through-builtins-'));
    // Two modules import the same built-ins, as the serve chunk's modules do.
    const importer = (name: string) =>
      [
        "import * as fs from 'node:fs';",
        "import path, { join } from 'node:path';",
        "import { createHash, randomUUID, webcrypto } from 'node:crypto';",
        `export const ${name} = () => ({ own: Object.getOwnPropertyNames(fs).filter((k) => k !== 'default').length, same: fs.readFileSync === process.getBuiltinModule('node:fs').readFileSync,`,
        "  promises: typeof fs.promises.readFile, join: join('a', 'b'), posix: path.posix.join('a', 'b'), hash: createHash('sha256').update('x').digest('hex').slice(0, 8),",
        '  uuid: randomUUID().length, subtle: typeof webcrypto.subtle });',
      ].join('\n');
    writeFileSync(join(dir, 'a.mjs'), importer('a'));
    writeFileSync(join(dir, 'b.mjs'), importer('b'));
    writeFileSync(join(dir, 'entry.mjs'), "import { a } from './a.mjs';\nimport { b } from './b.mjs';\nconsole.log(JSON.stringify([a(), b()]));\n");
    await esbuild.build({
      entryPoints: [join(dir, 'entry.mjs')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outdir: join(dir, 'out'),
      plugins: [lazyBuiltinsPlugin()],
      logLevel: 'silent',
    });
    const out = JSON.parse(execFileSync(process.execPath, [join(dir, 'out', 'entry.js')], { encoding: 'utf8' })) as unknown[];
    const each = { own: 0, same: true, promises: 'function', join: 'a/b', posix: 'a/b', hash: '2d711642', uuid: 36, subtle: 'object' };
    expect(out).toEqual([each, each]);
  });
});
