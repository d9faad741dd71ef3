/**
 * The runtime's rewrite of jco's glue (runtime/host/glue-rewrite.ts): synchronous host imports are
 * called directly, without jco's async-task bookkeeping, and everything a guest or host can see of
 * an import call stays as jco's glue had it — results, WIT errors, traps, resources. Real
 * components (the sandbox probe: a JavaScript-engine tool; the echo tool) transpiled by the real
 * transpiler; the script capsule tests (test/script/) cover a host import that calls into another
 * component on the same stack.
 */
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadComponent } from '../../runtime/host/index.ts';
import { GLUE_REVISION, rewriteGlue } from '../../runtime/host/glue-rewrite.ts';
import { generateComponent, JCO_VERSION } from '../../runtime/host/transpile-jco.ts';
import { fixture } from '../fixtures/build.ts';
import { op, probe, quietImports } from './probe.ts';

const freshCache = () => mkdtempSync(join(tmpdir(), 'glue-rewrite-'));

/** jco's glue of a fixture, as its transpiler writes it (before the rewrite). */
async function jcoGlue(name: string): Promise<string> {
  const g = await generateComponent(readFileSync(await fixture(name)));
  return Buffer.from(g.files['component.js']!).toString('utf8');
}

describe("jco's glue, rewritten", () => {
  it("a cache entry's glue calls each synchronous host import directly, not through jco's async-task wrapper", async () => {
    const c = await loadComponent(await fixture('sandbox-probe'), { cacheDir: freshCache() });
    const js = readFileSync(c.jsPath, 'utf8');
    const imports = js.match(/let trampoline\d+ = _trampoline\d+\.manuallyAsync \? /g) ?? [];
    expect(imports.length).toBeGreaterThan(10);
    expect(js.match(/\)\)\) : _murDirectImport\(/g)).toHaveLength(imports.length);
    expect(js).not.toMatch(/\)\)\) : _lowerImportBackwardsCompat\.bind\(/);
    expect(js).not.toMatch(/const hostProvided = true;/);
  });

  it('a cache entry written by jco alone, or by another revision of the rewrite, is not served: the component is transpiled again', async () => {
    const cacheDir = freshCache();
    const path = await fixture('echo-tool');
    const first = await loadComponent(path, { cacheDir });
    expect(first.transpiled).toBe(true);
    // The entry as it was named before the rewrite existed: digest and jco version alone.
    const old = join(cacheDir, `${first.sha256}-jco${JCO_VERSION}`);
    cpSync(first.dir, old, { recursive: true });
    const other = join(cacheDir, `${first.sha256}-jco${JCO_VERSION}-g0`);
    cpSync(first.dir, other, { recursive: true });
    expect(basename(first.dir)).toBe(`${first.sha256}-jco${JCO_VERSION}-${GLUE_REVISION}`);
    const again = await loadComponent(path, { cacheDir: freshCacheWith(old, other) });
    expect(again.transpiled).toBe(true);
    expect(basename(again.dir)).toBe(`${first.sha256}-jco${JCO_VERSION}-${GLUE_REVISION}`);
  });

  it("a trampoline not in jco's synchronous shape keeps jco's code on both sides; the others are rewritten", async () => {
    const js = await jcoGlue('echo-tool');
    const all = rewriteGlue(js);
    expect(all.kept).toBe(0);
    expect(all.direct).toBeGreaterThan(2);
    // One import's host task made asynchronous: that one cannot be proved synchronous.
    const n = /const _trampoline(\d+) = function/.exec(js)![1]!;
    const at = js.indexOf(`const _trampoline${n} = function`);
    const changed = js.slice(0, at) + js.slice(at).replace('isAsync: false,', 'isAsync: true,');
    const some = rewriteGlue(changed);
    expect([some.direct, some.kept]).toEqual([all.direct - 1, 1]);
    const wrapper = some.js.slice(some.js.indexOf(`let trampoline${n} = `));
    expect(wrapper.slice(0, wrapper.indexOf('let trampoline', 1))).toMatch(/\)\)\) : _lowerImportBackwardsCompat\.bind\(/);
    const body = some.js.slice(some.js.indexOf(`const _trampoline${n} = function`));
    expect(body.slice(0, body.indexOf(`_trampoline${n}.fnName`))).toContain('const hostProvided = true;');
    // A glue with JSPI imports (`manuallyAsync` set) is left as jco wrote it.
    const jspi = `${js}\n_trampoline${n}.manuallyAsync = true;\n`;
    expect(rewriteGlue(jspi)).toEqual({ js: jspi, direct: 0, kept: all.direct });
  });

  it("a host import's answer reaches the guest, and a WASI call's error code is the WIT err the guest sees", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'glue-files-'));
    const x = await probe({ preopen: dir }, { imports: { ...quietImports, 'murmur:task/task': { requestInput: async (p: string) => `blue, to ${p}` } } });
    try {
      expect((await op(x, { op: 'ask', prompt: 'colour?' })).body).toEqual({ ok: true, value: 'blue, to colour?' });
      // Descriptors and streams: owned handles made by the host, borrowed back by the guest's calls.
      expect((await op(x, { op: 'write', path: 'a.txt', text: 'written through the glue' })).body).toEqual({ ok: true, value: 24 });
      expect((await op(x, { op: 'read', path: 'a.txt' })).body).toEqual({ ok: true, value: 'written through the glue' });
      const missing = await op(x, { op: 'read', path: 'missing.txt' });
      expect(missing.body.ok).toBe(false);
      expect(missing.body.error).toMatch(/no-entry/);
    } finally {
      await x.close();
    }
  });

  it('a host import that fails traps the call (E-HOST-006, naming the import), and the next call runs on a fresh instance', async () => {
    let fail = true;
    const x = await probe(
      {},
      {
        imports: {
          ...quietImports,
          'murmur:task/task': {
            requestInput: async () => {
              if (fail) throw new Error('the asker has gone');
              return 'here';
            },
          },
        },
      },
    );
    try {
      expect((await op(x, { op: 'count' })).body.value).toBe(1);
      const e = await op(x, { op: 'ask' }).catch((err: unknown) => err);
      expect(e).toMatchObject({ code: 'E-HOST-006', kind: 'host-import' });
      expect((e as Error).message).toMatch(/host import murmur:task\/task#requestInput failed: the asker has gone/);
      fail = false;
      expect((await op(x, { op: 'count' })).body.value).toBe(1);
      expect((await op(x, { op: 'ask' })).body.value).toBe('here');
    } finally {
      await x.close();
    }
  });
});

/** A cache folder holding copies of the given entries, nothing else. */
function freshCacheWith(...entries: string[]): string {
  const dir = freshCache();
  for (const e of entries) cpSync(e, join(dir, basename(e)), { recursive: true });
  return dir;
}
