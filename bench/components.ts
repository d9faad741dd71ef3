/**
 * Component host costs, measured in one run (2-core machine, noisy: read the ratios):
 * transpile (first vs cached), instantiate (cold vs warm), a trivial export call through the
 * isolating worker vs the same export called in-process without isolation, a bridged host call,
 * and a 100 KB argument round trip.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ComponentInstance, loadComponent } from '../runtime/host/index.ts';
import { fixture } from '../test/fixtures/build.ts';
import { fmtMs, median, table, timeIt } from './stats.ts';

export async function benchComponents(): Promise<string> {
  const wasm = await fixture('sandbox-probe');
  const cacheDir = mkdtempSync(join(tmpdir(), 'bench-jco-'));
  let t = performance.now();
  const loaded = await loadComponent(wasm, { cacheDir });
  const transpileFirst = performance.now() - t;
  const cachedTimes = await timeIt(5, () => loadComponent(wasm, { cacheDir }), 1);
  const imports = {
    'murmur:task/task': { requestInput: async (p: string) => p },
    'murmur:text/chunks': { emitChunk: () => {}, emitThinkingChunk: () => {} },
  };
  const grants = { env: {}, networkAllow: [] };
  const mk = () => new ComponentInstance(loaded, { grants, imports, deadlineMs: 60_000, memoryBytes: 512 * 1048576 });
  t = performance.now();
  const first = mk();
  await first.start();
  const instCold = performance.now() - t;
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) {
    const x = mk();
    // Let the pool finish booting its spare worker, as it does between instance starts in a session.
    await new Promise((r) => setTimeout(r, 1500));
    const t0 = performance.now();
    await x.start();
    warm.push(performance.now() - t0);
    await x.close();
  }
  const call = (op: Record<string, unknown>) => first.call(['run', 'run'], [{ data: JSON.stringify(op) }]);
  const isolated = await timeIt(2000, () => call({ op: 'ping' }), 200);
  const bridged = await timeIt(1000, () => call({ op: 'ask', prompt: 'x' }), 100);
  const big = 'y'.repeat(100 * 1024);
  const bigTrip = await timeIt(100, () => call({ op: 'echo', value: big }), 10);

  // The same export in-process, no worker and no bridge (host imports answer synchronously).
  const { WASIShim } = await import('@bytecodealliance/preview2-shim/instantiation');
  const mods: Record<string, WebAssembly.Module> = {};
  for (const f of loaded.coreFiles) mods[f] = await WebAssembly.compile(readFileSync(join(loaded.dir, f)));
  const { instantiate } = (await import(pathToFileURL(loaded.jsPath).href)) as { instantiate: (g: (n: string) => WebAssembly.Module, i: unknown) => Promise<{ run: { run(x: unknown): unknown } }> };
  const shim = new WASIShim({ sandbox: { preopens: {}, env: {} } } as never);
  const local = await instantiate((n) => mods[n]!, { ...shim.getImportObject(), 'murmur:task/task': { requestInput: (p: string) => p }, 'murmur:text/chunks': { emitChunk() {}, emitThinkingChunk() {} } });
  const inproc = await timeIt(2000, () => local.run.run({ data: '{"op":"ping"}' }), 200);
  const inprocAsk = await timeIt(1000, () => local.run.run({ data: '{"op":"ask","prompt":"x"}' }), 100);
  await first.close();

  const mIso = median(isolated);
  const mIn = median(inproc);
  const bridgeCost = median(bridged) - mIso - (median(inprocAsk) - mIn);
  return [
    'components (sandbox-probe, SpiderMonkey + WASI, 12.7 MB)',
    table([
      ['transpile, first', fmtMs(transpileFirst)],
      ['transpile, cached (load from disk cache)', fmtMs(median(cachedTimes)), `ratio ${(median(cachedTimes) / transpileFirst).toFixed(3)}`],
      ['instantiate, cold (compile + worker + instantiate)', fmtMs(instCold)],
      ['instantiate, warm (modules compiled, booted worker from the pool)', fmtMs(median(warm)), `target ≤ 20 ms`],
      ['trivial call, isolated (worker)', fmtMs(mIso), `target ≤ 50 µs`],
      ['trivial call, in-process (no isolation)', fmtMs(mIn), `isolation costs ${(mIso / mIn).toFixed(1)}×`],
      ['bridged host call (guest→async host fn)', fmtMs(Math.max(0, bridgeCost)), 'over the same call in-process'],
      ['100 KB argument round trip, isolated', fmtMs(median(bigTrip))],
    ]),
  ].join('\n');
}
