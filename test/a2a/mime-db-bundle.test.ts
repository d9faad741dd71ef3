/**
 * mime-db's table as the runtime image bundles express (scripts/image-files.ts with
 * scripts/lazy-mime-db.ts): a JSON file of its package required by path when mime-types loads, not
 * ≈ 150 KB of object literal inlined into the serve chunk, whose source, bytecode and boilerplate
 * a serving process would hold for its life; mime-types answers as before.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { lazyMimeDb } from '../../scripts/lazy-mime-db.ts';

const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
// Inside the tree, so the entry's packages resolve from its node_modules.
const DIR = join(PROJECT_ROOT, '.cache', `mime-db-bundle-${process.pid}`);
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

describe("the image's bundle of mime-types", () => {
  it("requires mime-db's table from its file instead of carrying it as source, and looks types up as before", async () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(
      join(DIR, 'entry.mjs'),
      "import mime from 'mime-types';\nconsole.log(JSON.stringify([mime.contentType('json'), mime.lookup('page.html'), mime.extension('image/png')]));\n",
    );
    const out = join(DIR, 'out');
    const files = new Set<string>();
    await esbuild.build({
      entryPoints: [join(DIR, 'entry.mjs')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outdir: out,
      plugins: [lazyMimeDb(PROJECT_ROOT, out, files)],
      banner: { js: "import { createRequire as __imageRequire } from 'node:module'; const require = __imageRequire(import.meta.url);" },
      logLevel: 'silent',
    });
    const code = readFileSync(join(out, 'entry.js'), 'utf8');
    expect(code).not.toContain('application/1d-interleaved-parityfec');
    expect([...files]).toEqual(['node_modules/mime-db/db.json']);
    const answers = JSON.parse(execFileSync(process.execPath, [join(out, 'entry.js')], { encoding: 'utf8' })) as string[];
    expect(answers).toEqual(['application/json; charset=utf-8', 'text/html', 'png']);
  });
});
