/**
 * Component host costs, measured in one run (2-core machine, noisy: read the paired ratios):
 * transpile (first vs cached), instantiate (cold vs warm), a trivial export call through the
 * isolating worker (with and without the threads polling for each other, host/doorbell.ts) vs the
 * same export called in-process without isolation, a bridged host call,
 * and a 100 KB argument round trip.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ComponentInstance, loadComponent } from '../runtime/host/index.ts';
import { SPARES } from '../runtime/host/spares.ts';
import { fixture } from '../test/fixtures/build.ts';
import { watFixture } from '../test/fixtures/build-wat.ts';
import { fmtMs, median, timeIt } from './stats.ts';
import { fmtSpread, machineLine, paired, pairedRows, spread, table } from './paired.ts';

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
  // Warm, two ways: a booted worker from the pool instantiating the component (spares off), and
  // a pre-instantiated spare binding the instance's grants (spares on, as by default).
  const warmStart = async (spares: number): Promise<{ ms: number; fromSpare: boolean }> => {
    SPARES.max = spares;
    const x = mk();
    // Let the pool boot its next worker (and make its spare), as it does between instance starts.
    await new Promise((r) => setTimeout(r, 1500));
    const t0 = performance.now();
    await x.start();
    const ms = performance.now() - t0;
    await x.close();
    return { ms, fromSpare: x.fromSpare };
  };
  const defaultSpares = SPARES.max;
  const warmPool: number[] = [];
  for (let i = 0; i < 5; i++) warmPool.push((await warmStart(0)).ms);
  const warm: number[] = [];
  let spared = 0;
  for (let i = 0; i < 6; i++) {
    const r = await warmStart(Math.max(1, defaultSpares));
    // The first start after switching spares on makes the first spare.
    if (i === 0) continue;
    warm.push(r.ms);
    if (r.fromSpare) spared++;
  }
  SPARES.max = defaultSpares;
  const call = (op: Record<string, unknown>) => first.call(['run', 'run'], [{ data: JSON.stringify(op) }]);
  const bridged = await timeIt(1000, () => call({ op: 'ask', prompt: 'x' }), 100);
  const big = 'y'.repeat(100 * 1024);
  const bigTrip = await timeIt(100, () => call({ op: 'echo', value: big }), 10);

  // The same export in-process, no worker and no bridge (host imports answer synchronously).
  const { WASIShim } = await import('@bytecodealliance/preview2-shim/instantiation');
  const mods: Record<string, WebAssembly.Module> = {};
  for (const f of loaded.coreFiles) mods[f] = await WebAssembly.compile(readFileSync(join(loaded.dir, f)));
  const { instantiate } = (await import(pathToFileURL(loaded.jsPath).href)) as {
    instantiate: (g: (n: string) => WebAssembly.Module, i: unknown) => Promise<{ run: { run(x: unknown): unknown } }>;
  };
  const shim = new WASIShim({ sandbox: { preopens: {}, env: {} } } as never);
  const local = await instantiate((n) => mods[n]!, {
    ...shim.getImportObject(),
    'murmur:task/task': { requestInput: (p: string) => p },
    'murmur:text/chunks': { emitChunk() {}, emitThinkingChunk() {} },
  });
  const inprocAsk = await timeIt(1000, () => local.run.run({ data: '{"op":"ask","prompt":"x"}' }), 100);

  // A trivial export with no JS engine in the guest (a WAT tool, no WASI): what is left is the
  // host's own cost per call.
  const wat = await loadComponent(await watFixture('script-wat-tool'), { cacheDir });
  const watInst = new ComponentInstance(wat, { grants, imports: {}, deadlineMs: 60_000, memoryBytes: 64 * 1048576 });
  // The same, with neither thread polling for the other (host/doorbell.ts): each hand-off sleeps.
  const watSleeps = new ComponentInstance(wat, { grants, imports: {}, deadlineMs: 60_000, memoryBytes: 64 * 1048576, spinUs: 0 });
  const watArgs = [{ data: 'x' }];
  const watMods: Record<string, WebAssembly.Module> = {};
  for (const f of wat.coreFiles) watMods[f] = await WebAssembly.compile(readFileSync(join(wat.dir, f)));
  const watLocal = await (
    (await import(pathToFileURL(wat.jsPath).href)) as {
      instantiate: (g: (n: string) => WebAssembly.Module, i: unknown) => Promise<{ run: { run(x: unknown): unknown } }>;
    }
  ).instantiate((n) => watMods[n]!, {});
  // Warm-up, untimed: the row is the steady per-call cost, and the worker's side of a call (the
  // glue, the call loop) runs at its optimized speed only after ≈ 1 000 calls (measured: its
  // guest time falls from ≈ 45 to 3–6 µs), the in-process arm alike.
  await timeIt(2000, () => watInst.call(['run', 'run'], watArgs), 0);
  await timeIt(2000, () => watSleeps.call(['run', 'run'], watArgs), 0);
  await timeIt(2000, () => watLocal.run.run(watArgs[0]), 0);
  await timeIt(200, () => call({ op: 'ping' }), 0);
  await timeIt(200, () => local.run.run({ data: '{"op":"ping"}' }), 0);
  // In-process against isolated, alternating round by round; each round is the median of a batch.
  let watCalls = 0;
  const before = { calls: watInst.callsPolled, answers: watInst.answersPolled };
  const ROUNDS = 10;
  const batchMedian = async (fn: () => unknown) => median(await timeIt(200, fn, 0));
  const watRes = await paired(
    [
      { name: 'trivial call, in-process (no isolation): WAT tool, no JS engine', run: () => batchMedian(() => watLocal.run.run(watArgs[0])) },
      {
        name: 'trivial call, isolated (worker): WAT tool, no JS engine',
        run: () =>
          batchMedian(() => {
            watCalls++;
            return watInst.call(['run', 'run'], watArgs);
          }),
      },
      { name: 'trivial call, isolated, no polling (spinUs 0): every hand-off sleeps', run: () => batchMedian(() => watSleeps.call(['run', 'run'], watArgs)) },
    ],
    ROUNDS,
  );
  const pct = (n: number): string => `${n}/${watCalls} (${Math.round((n / watCalls) * 100)}%)`;
  const polledRow: [string, string, string] = [
    '  isolated calls read by a polling worker / answers read by a polling main thread',
    `${pct(watInst.callsPolled - before.calls)} / ${pct(watInst.answersPolled - before.answers)}`,
    'host/doorbell.ts',
  ];
  const probeRes = await paired(
    [
      { name: 'probe ping, in-process (no isolation): SpiderMonkey', run: () => batchMedian(() => local.run.run({ data: '{"op":"ping"}' })) },
      { name: 'probe ping, isolated (worker): SpiderMonkey, JSON in the guest', run: () => batchMedian(() => call({ op: 'ping' })) },
    ],
    ROUNDS,
  );
  await watInst.close();
  await watSleeps.close();
  await first.close();
  const watIsoS = watRes.arms[1]!.spread;
  const hostAdds = spread(watRes.arms[1]!.samples.map((v, r) => v - watRes.arms[0]!.samples[r]!));
  const mIso = probeRes.arms[1]!.spread.median;
  const mIn = probeRes.arms[0]!.spread.median;
  const bridgeCost = median(bridged) - mIso - (median(inprocAsk) - mIn);
  return [
    'components (sandbox-probe, SpiderMonkey + WASI, 12.7 MB)',
    table([
      ['transpile, first', fmtMs(transpileFirst)],
      ['transpile, cached (load from disk cache)', fmtMs(median(cachedTimes)), `ratio ${(median(cachedTimes) / transpileFirst).toFixed(3)}`],
      ['instantiate, cold (compile + worker + instantiate)', fmtMs(instCold)],
      ['instantiate, warm (compiled modules, booted worker; spares off)', fmtMs(median(warmPool))],
      [
        'instantiate, warm (pre-instantiated spare binds grants)',
        fmtMs(median(warm)),
        `target ≤ 20 ms; ${spared}/${warm.length} from a spare; ${(median(warm) / median(warmPool)).toFixed(3)} of the booted-worker start`,
      ],
      ...pairedRows(watRes, fmtMs),
      polledRow,
      ['host cost per trivial call (isolated − in-process, paired)', fmtSpread(hostAdds, fmtMs), `target: isolated ≤ 50 µs median (${fmtMs(watIsoS.median)})`],
      ...pairedRows(probeRes, fmtMs),
      ['bridged host call (guest→async host fn)', fmtMs(Math.max(0, bridgeCost)), 'over the same call in-process'],
      ['100 KB argument round trip, isolated', fmtMs(median(bigTrip))],
    ]),
    machineLine(),
  ].join('\n');
}
