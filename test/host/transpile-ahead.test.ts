/**
 * A first run's transpile in the runtime's own process (runtime/host/transpile-ahead.ts): in a
 * worker thread, no transpiler process; what it could not do left to the load, which reports it as
 * before; none of the runtime's environment in the worker; V8's tier-up off for the transpiler and
 * on again for every component compiled after it; the Node binary's pages let go once jco has
 * loaded and once the first component is transpiled (host/transpile-pages.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ComponentLoadError, IntegrityError, loadComponent } from '../../runtime/host/index.ts';
import { aheadPageSteps, runTranspileWorker, transpileAhead } from '../../runtime/host/transpile-ahead.ts';
import { addonPath } from '../../runtime/native-addon.ts';
import { transpilerStarts } from '../../runtime/host/transpile-child-run.ts';
import { fixture } from '../fixtures/build.ts';

const freshCache = () => mkdtempSync(join(tmpdir(), 'jco-ahead-'));

describe('the transpile ahead of a first run', () => {
  it('transpiles the components not cached yet in this process (no transpiler process), and their loads are cache hits', async () => {
    const cacheDir = freshCache();
    const [echo, probe] = [await fixture('echo-tool'), await fixture('sandbox-probe')];
    const before = transpilerStarts();
    const r = await transpileAhead(
      [
        { name: 'echo-tool', path: echo },
        { name: 'sandbox-probe', path: probe },
      ],
      { cacheDir },
    );
    expect(r).toEqual({ transpiled: ['echo-tool', 'sandbox-probe'], refused: [] });
    expect(transpilerStarts()).toBe(before);
    const loaded = await Promise.all([loadComponent(echo, { cacheDir }), loadComponent(probe, { cacheDir })]);
    expect(loaded.map((c) => c.transpiled)).toEqual([false, false]);
    expect(loaded[0]!.exports).toContain('run');
    // Once cached, a second one transpiles nothing.
    expect(await transpileAhead([{ name: 'echo-tool', path: echo }], { cacheDir })).toEqual({ transpiled: [], refused: [] });
  });

  it('a component the transpiler refuses is left out of the cache: its load still fails with E-HOST-001 naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bad-ahead-'));
    writeFileSync(join(dir, 'junk.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0, 9, 9, 9]));
    const cacheDir = freshCache();
    const r = await transpileAhead(
      [
        { name: 'junk', path: join(dir, 'junk.wasm') },
        { name: 'echo-tool', path: await fixture('echo-tool') },
      ],
      { cacheDir },
    );
    expect(r).toEqual({ transpiled: ['echo-tool'], refused: ['junk'] });
    expect(readdirSync(cacheDir)).toHaveLength(1);
    const err = await loadComponent(join(dir, 'junk.wasm'), { cacheDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComponentLoadError);
    expect(err).toMatchObject({ code: 'E-HOST-001', message: expect.stringMatching(/^junk: is not a loadable WebAssembly component/) });
  });

  it('a component whose bytes do not match its pin is not transpiled: its load refuses it (E-HOST-002)', async () => {
    const cacheDir = freshCache();
    const echo = await fixture('echo-tool');
    const wrong = 'a'.repeat(64);
    expect(await transpileAhead([{ name: 'echo-tool', path: echo, sha256: wrong }], { cacheDir })).toEqual({ transpiled: [], refused: [] });
    expect(readdirSync(cacheDir)).toEqual([]);
    await expect(loadComponent(echo, { cacheDir, sha256: wrong })).rejects.toBeInstanceOf(IntegrityError);
  });

  it("lets the Node binary's pages go once jco has loaded and once its first component is transpiled, not again for the next", async () => {
    if (!addonPath()) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    const r = await transpileAhead(
      [
        { name: 'echo-tool', path: await fixture('echo-tool') },
        { name: 'sandbox-probe', path: await fixture('sandbox-probe') },
      ],
      { cacheDir: freshCache() },
    );
    expect(r.transpiled).toEqual(['echo-tool', 'sandbox-probe']);
    const released = expect.any(Number) as unknown as number;
    expect(aheadPageSteps()).toEqual([
      { phase: 'jco loaded', released },
      { phase: 'first transpiled', released },
    ]);
  });

  it("the transpile worker sees none of the runtime's environment", async () => {
    process.env.MURMUR_TEST_SECRET_AHEAD = 'not-for-the-transpiler';
    try {
      const replies = await runTranspileWorker([], new URL('./env-probe-worker.mjs', import.meta.url).href);
      expect(replies.get(0)?.meta).toEqual([]);
    } finally {
      delete process.env.MURMUR_TEST_SECRET_AHEAD;
    }
  });

  it('compiles the transpiler with Liftoff only, and a module compiled after it still tiers up to TurboFan', async () => {
    const probe = fileURLToPath(new URL('./tier-probe.ts', import.meta.url));
    const child = spawn(process.execPath, ['--trace-wasm-compilation-times', '--import', 'tsx', probe, await fixture('echo-tool'), freshCache()], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    // Ends the probe once the hot loop compiled after AHEAD-DONE (Liftoff first) is compiled with TurboFan: what this test waits for.
    const seen = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const done = out.indexOf('AHEAD-DONE');
        const hot = done >= 0 ? /Compiled function (0x[0-9a-f]+)#0 using Liftoff/.exec(out.slice(done))?.[1] : undefined;
        if (hot && out.slice(done).includes(`Compiled function ${hot}#0 using TurboFan`)) resolve(out);
      });
      child.once('exit', (code) => reject(new Error(`the probe ended (${code}) before a TurboFan compile:\n${out.slice(-2000)}`)));
    }).finally(() => child.kill('SIGKILL'));
    const start = seen.indexOf('AHEAD-START');
    const done = seen.indexOf('AHEAD-DONE');
    expect(seen.slice(done)).toMatch(/^AHEAD-DONE \{"transpiled":\["probe"\],"refused":\[\]\}/);
    // Per module (V8 names a function by its module's address), the compiles during the transpile:
    // the transpiler's is the module with the most, all with Liftoff, none with TurboFan.
    const byModule = new Map<string, string[]>();
    for (const m of seen.slice(start, done).matchAll(/Compiled function (0x[0-9a-f]+)#\d+ using (\w+)/g))
      byModule.set(m[1]!, [...(byModule.get(m[1]!) ?? []), m[2]!]);
    const tiers = [...byModule.values()].sort((a, b) => b.length - a.length)[0]!;
    expect(tiers.length).toBeGreaterThan(100);
    expect(new Set(tiers)).toEqual(new Set(['Liftoff']));
    // After it, the hot loop's module (compiled after AHEAD-DONE) reached TurboFan: the wait above.
  }, 120_000);
});
