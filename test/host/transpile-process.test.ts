import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ComponentLoadError, loadComponent } from '../../runtime/host/index.ts';
import { parseReply, transpilerPid, transpilerStarts } from '../../runtime/host/transpile-child-run.ts';
import { JobReader, frameJob } from '../../runtime/host/transpile-jobs.ts';
import { generateComponent } from '../../runtime/host/transpile-jco.ts';
import { addonPath } from '../../runtime/native-addon.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { esbuildMetafile } from '../cli/start-packages.ts';
import { fixture } from '../fixtures/build.ts';

const freshCache = () => mkdtempSync(join(tmpdir(), 'jco-batch-'));

describe('the transpiler process', () => {
  it('components queued together are transpiled one after another by one transpiler process', async () => {
    const cacheDir = freshCache();
    const before = transpilerStarts();
    const [a, b] = await Promise.all([loadComponent(await fixture('echo-tool'), { cacheDir }), loadComponent(await fixture('sandbox-probe'), { cacheDir })]);
    expect([a.transpiled, b.transpiled]).toEqual([true, true]);
    expect(a.exports).toContain('run');
    expect(transpilerStarts() - before).toBe(1);
    expect(transpilerPid()).toBeUndefined(); // ended once its queue was empty
  });

  it('a cache entry holds the glue, its core modules, meta.json and package.json: no TypeScript declarations, which nothing reads', async () => {
    const c = await loadComponent(await fixture('echo-tool'), { cacheDir: freshCache() });
    expect(c.transpiled).toBe(true);
    const files = readdirSync(c.dir, { recursive: true, encoding: 'utf8' }).sort();
    expect(files).toEqual(['component.js', ...c.coreFiles, 'meta.json', 'package.json'].sort());
  });

  it("the transpiler process loads jco's transpiler core only, not jco's API (which compiles wasm-tools and loads oxc-minify's addon)", async () => {
    const meta = await esbuildMetafile([fileURLToPath(new URL('../../runtime/host/transpile-child.ts', import.meta.url))]);
    const imported = Object.values(meta.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path));
    expect(imported.filter((p) => p.startsWith('@bytecodealliance/') || p.startsWith('oxc-'))).toEqual([]);
  });

  it("the transpiler's core alone gives what jco's own transpile gives: the same files, byte for byte, imports and exports", async () => {
    const { transpile } = await import('@bytecodealliance/jco');
    for (const name of ['echo-tool', 'sandbox-probe']) {
      const bytes = readFileSync(await fixture(name));
      const ours = await generateComponent(bytes);
      const jco = await transpile(bytes, {
        name: 'component',
        instantiation: 'async',
        importBindings: 'hybrid',
        emitTypescriptDeclarations: false,
      } as Parameters<typeof transpile>[1]);
      expect(Object.keys(ours.files).sort()).toEqual(Object.keys(jco.files).sort());
      for (const f of Object.keys(ours.files)) expect(Buffer.from(ours.files[f]!).equals(Buffer.from(jco.files[f]!)), `${name}: ${f}`).toBe(true);
      expect(ours.imports).toEqual(jco.imports);
      expect(ours.exports).toEqual(jco.exports);
    }
  });

  it('a component the transpiler refuses fails alone: the one queued behind it in the same process still transpiles', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bad-batch-'));
    writeFileSync(join(dir, 'junk.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0, 9, 9, 9]));
    const before = transpilerStarts();
    const [bad, good] = await Promise.allSettled([
      loadComponent(join(dir, 'junk.wasm'), { cacheDir: freshCache() }),
      loadComponent(await fixture('echo-tool'), { cacheDir: freshCache() }),
    ]);
    expect(bad.status).toBe('rejected');
    expect((bad as PromiseRejectedResult).reason).toBeInstanceOf(ComponentLoadError);
    expect(String((bad as PromiseRejectedResult).reason.message)).toMatch(/^junk: /);
    expect(good.status).toBe('fulfilled');
    expect((good as PromiseFulfilledResult<{ transpiled: boolean }>).value.transpiled).toBe(true);
    expect(transpilerStarts() - before).toBe(1);
  });

  it('a transpiler process that dies mid-job fails that job with how it ended, and the job queued behind it gets a fresh process', async () => {
    const before = transpilerStarts();
    const first = loadComponent(await fixture('sandbox-probe'), { cacheDir: freshCache() });
    const second = loadComponent(await fixture('echo-tool'), { cacheDir: freshCache() });
    // loadComponent reads and hashes before it queues: wait for the process its job started.
    const pid = await new Promise<number>((resolve) => {
      const look = (): void => {
        const p = transpilerPid();
        if (p) resolve(p);
        else setImmediate(look);
      };
      look();
    });
    process.kill(pid, 'SIGKILL');
    const err = await first.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComponentLoadError);
    expect((err as Error).message).toMatch(/sandbox-probe: the transpiler process ended with SIGKILL/);
    expect((await second).transpiled).toBe(true);
    expect(transpilerStarts() - before).toBe(2);
  });

  it("a transpiler process lets the Node binary's pages go once jco has loaded and once its first component is transpiled, not again for the next", async () => {
    if (!addonPath()) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../../runtime/host/transpile-child.ts', import.meta.url))], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const cacheDir = freshCache();
    for (const [i, name] of ['echo-tool', 'sandbox-probe'].entries())
      for (const part of frameJob({ dir: join(cacheDir, `entry-${i}`), name, bytes: readFileSync(await fixture(name)) })) child.stdin.write(part);
    child.stdin.end();
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(0);
    const replies = out
      .trim()
      .split('\n')
      .map((l) => parseReply(l)!);
    const released = expect.any(Number) as unknown as number;
    const both = [
      { phase: 'jco loaded', released },
      { phase: 'first transpiled', released },
    ];
    expect(replies.map((r) => [Boolean(r.meta), r.pages])).toEqual([
      [true, both],
      [true, both],
    ]);
  });

  it('job framing survives any chunking of the stream, and a malformed header is named', () => {
    const jobs = [
      { dir: '/c/a', name: 'a', bytes: new Uint8Array([1, 2, 3, 10, 10]) },
      { dir: '/c/b', name: 'b\nc', bytes: new Uint8Array(0) },
      { dir: '/c/ü', name: 'd', bytes: new Uint8Array(70000).fill(10) },
    ];
    const stream = Buffer.concat(jobs.flatMap(frameJob));
    for (const size of [1, 7, 4096, stream.length]) {
      const r = new JobReader();
      const got: { dir: string; name: string; bytes: number[] }[] = [];
      for (let i = 0; i < stream.length; i += size) {
        r.push(stream.subarray(i, i + size));
        for (let j = r.next(); j; j = r.next()) got.push({ dir: j.dir, name: j.name, bytes: [...j.bytes] });
      }
      expect(got).toEqual(jobs.map((j) => ({ dir: j.dir, name: j.name, bytes: [...j.bytes] })));
      expect(r.pending()).toBe(0);
    }
    const part = new JobReader();
    const one = Buffer.concat(frameJob(jobs[0]!));
    part.push(one.subarray(0, one.length - 2));
    expect(part.next()).toBeUndefined();
    expect(part.pending()).toBe(one.length - 2);
    const r = new JobReader();
    r.push(Buffer.from('{"dir":"/x","bytes":-1}\n'));
    expect(() => r.next()).toThrow(/transpile job header must be .*got \{"dir":"\/x","bytes":-1\}/);
  });

  it("a line something else printed on the transpiler's stdout is never taken for a job's answer", () => {
    expect(parseReply('{"meta":{"imports":[],"exports":["run"],"coreFiles":["a.wasm"]}}')).toEqual({
      meta: { imports: [], exports: ['run'], coreFiles: ['a.wasm'] },
    });
    expect(parseReply('{"error":"is not a component","hint":"check it"}')).toEqual({ error: 'is not a component', hint: 'check it' });
    for (const other of ['(node:1) ExperimentalWarning: something', '{"level":"warn"}', 'null', '[1]', '']) expect(parseReply(other)).toBeUndefined();
  });
});
