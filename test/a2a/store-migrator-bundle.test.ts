/**
 * The A2A SDK's schema migrations as the runtime image bundles them (scripts/image-files.ts: the
 * SDK's runner is an entry of main.js's split bundle): the runner's kysely, Migrator included, is
 * the bundle's own, so a serving process holds one kysely, not the bundle's and a second one loaded
 * file by file from node_modules (≈ 1.4 MiB of its main heap for the rest of its life), and the
 * bundled runner migrates a SQLite store.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { sdkMigratorImports } from '../../scripts/sdk-migrator-imports.ts';
import { tmp } from '../loop/kit.ts';

const require = createRequire(import.meta.url);
const esbuild = require('esbuild') as typeof import('esbuild');
// Inside the tree, so the bundle's external packages resolve from its node_modules.
const OUT = join(PROJECT_ROOT, '.cache', `migrator-bundle-${process.pid}`);
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

describe("the image's bundled SDK migration runner", () => {
  it("imports kysely's Migrator from the bundle, not from node_modules, and migrates a SQLite store", async () => {
    mkdirSync(OUT, { recursive: true });
    const run = join(PROJECT_ROOT, 'node_modules/@a2a-js/sdk/dist/cli/run.js');
    const r = await esbuild.build({
      // The store's own migrations import kysely/migration as the serve chunk does.
      entryPoints: [
        { in: join(PROJECT_ROOT, 'runtime/a2a/store/murmur-schema.ts'), out: 'schema' },
        { in: run, out: 'a2a-db-run' },
      ],
      bundle: true,
      splitting: true,
      outdir: OUT,
      metafile: true,
      platform: 'node',
      format: 'esm',
      external: ['better-sqlite3', 'pg', 'mysql2'],
      plugins: [sdkMigratorImports()],
      logLevel: 'silent',
    });
    const outs = r.metafile.outputs;
    const entry = Object.keys(outs).find((o) => outs[o]!.entryPoint?.endsWith('cli/run.js'))!;
    // Run in a process of its own that records every module Node resolves for it.
    const dir = tmp('migrator-bundle-');
    const db = join(dir, 'store.db');
    const resolved = join(dir, 'resolved.txt');
    const hooks = `import { appendFileSync } from 'node:fs';\nexport async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(resolved)}, r.url + '\\n'); return r; }`;
    writeFileSync(
      join(dir, 'record.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});\n`,
    );
    const script = [
      `const { run } = await import(${JSON.stringify(pathToFileURL(join(PROJECT_ROOT, entry)).href)});`,
      `const errors = [];`,
      `const rc = await run(['upgrade', '--url', ${JSON.stringify(`sqlite:${db}`)}], {}, { log: () => undefined, error: (...a) => errors.push(a.map(String).join(' ')) });`,
      `console.log(JSON.stringify({ rc, errors }));`,
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', pathToFileURL(join(dir, 'record.mjs')).href, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ rc: 0, errors: [] });
    const loaded = readFileSync(resolved, 'utf8').split('\n');
    expect(loaded.filter((u) => u.includes('/node_modules/kysely/'))).toEqual([]);
    const Database = require('better-sqlite3') as typeof import('better-sqlite3');
    const conn = new Database(db, { readonly: true });
    const tables = (conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
    conn.close();
    expect(tables.some((t) => /^a2a_.*migrations$/.test(t))).toBe(true);
  });
});
