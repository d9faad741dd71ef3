/**
 * HookBus costs (not a test; prints medians and ratios). The same hook component is called three
 * ways: a bare ComponentInstance call of `lifecycle.onInference`, a blocking dispatch through the
 * bus (`bus.inference`, and a policy decision `bus.toolDecision`), and an async dispatch (enqueue
 * only; the calls run behind it). Targets: blocking overhead ≤ 50 µs over the bare call, async
 * enqueue ≤ 5 µs.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentInstance, loadComponent } from '../runtime/host/index.ts';
import { HookBus } from '../runtime/hooks/bus.ts';
import { hookImports } from '../runtime/hooks/imports.ts';
import type { HookServices, StagedHook } from '../runtime/hooks/types.ts';
import { newSessionId } from '../runtime/session/id.ts';
import { TraceWriter } from '../runtime/trace/writer.ts';
import { fixture } from '../test/fixtures/build.ts';
import { median, timeIt } from './stats.ts';
import { fmtSpread, fmtTime, machineLine, paired, pairedRows, spread, table } from './paired.ts';

const EV = { turn: 1, inputTokens: 100n, outputTokens: 20n, decision: 'end_turn', toolName: undefined, prompt: undefined, output: undefined, tools: undefined };
const TOOL = { turn: 1, toolName: 'echo', inputBytes: 2n, input: '{}' };

export default async function benchHooks(): Promise<string> {
  const N = Number(process.env.HOOK_BENCH_N ?? 2000);
  const wasm = await fixture('hook-script');
  const services: HookServices = {
    runInference: async () => ({ text: '', modelUsed: 'm', inputTokens: 0n, outputTokens: 0n }),
    countTokens: (t) => t.length,
    taskIo: () => undefined,
    conversation: () => [],
  };
  const spec = (name: string, extra: Partial<StagedHook> = {}): StagedHook => ({
    name,
    wasmPath: wasm,
    executionMode: 'blocking',
    commitPolicy: 'none',
    env: { HOOK_SCRIPT: '{}' },
    ...extra,
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-hooks-'));
  const sessionId = newSessionId();
  const trace = new TraceWriter(join(dir, 'trace.jsonl'), sessionId);

  // Bare: the component host alone, same grants and imports the bus gives a hook.
  const comp = await loadComponent(wasm);
  const bare = new ComponentInstance(comp, {
    grants: { env: { HOOK_SCRIPT: '{}' }, networkAllow: [] },
    imports: hookImports(spec('bare'), services, { spendRefused: false }),
    deadlineMs: 30_000,
    memoryBytes: 512 * 1048576,
  });
  await bare.start();
  const blocking = await HookBus.load({ hooks: [spec('fg', { binding: 'on-inference' })], workdir: join(dir, 'b'), sessionId, trace, services });
  const policy = await HookBus.load({
    hooks: [spec('guard', { binding: 'on-tool-call', commitPolicy: 'deny' })],
    workdir: join(dir, 'p'),
    sessionId,
    trace,
    services,
  });
  // Warm all three, then alternate them round by round: each round is the median of a batch.
  await timeIt(200, () => bare.call(['lifecycle', 'onInference'], [EV]), 0);
  await timeIt(200, () => blocking.inference(EV), 0);
  await timeIt(200, () => policy.toolDecision(TOOL), 0);
  const ROUNDS = 10;
  const batch = Math.max(10, Math.floor(N / ROUNDS));
  const res = await paired(
    [
      {
        name: 'bare ComponentInstance call (onInference)',
        run: async () => median(await timeIt(batch, () => bare.call(['lifecycle', 'onInference'], [EV]), 0)),
      },
      { name: 'blocking dispatch: bus.inference, one hook', run: async () => median(await timeIt(batch, () => blocking.inference(EV), 0)) },
      { name: 'policy decision: bus.toolDecision, one policy hook', run: async () => median(await timeIt(batch, () => policy.toolDecision(TOOL), 0)) },
    ],
    ROUNDS,
  );
  // Overhead per round: the dispatch's median minus the bare call's median in the same round.
  const over = (i: number) => spread(res.arms[i]!.samples.map((v, r) => v - res.arms[0]!.samples[r]!));

  const asyncBus = await HookBus.load({
    hooks: [spec('bg', { executionMode: 'async' })],
    workdir: join(dir, 'a'),
    sessionId,
    trace,
    services,
    queueDepth: 1_000_000,
  });
  const enqueue: number[] = [];
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < N / 5; i++) {
      const t = process.hrtime.bigint();
      await asyncBus.inference(EV);
      enqueue.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    await asyncBus.drain(60_000);
  }
  const noHooks = await HookBus.load({ hooks: [], workdir: join(dir, 'n'), sessionId, trace, services });
  const emptyTimes = await timeIt(N, () => noHooks.inference(EV), 200);

  const q = median(enqueue);
  await Promise.all([bare.close(), blocking.close(), policy.close(), asyncBus.close(), noHooks.close()]);
  return [
    `hooks (hook-script component, blocking unless said; ${ROUNDS} rounds of ${batch} calls per arm, alternating; per-round medians):`,
    table([
      ...pairedRows(res, fmtTime),
      ['blocking dispatch overhead over the bare call', fmtSpread(over(1), fmtTime), 'target ≤ 50 µs (median)'],
      ['policy decision overhead over the bare call', fmtSpread(over(2), fmtTime)],
      ['async dispatch: bus.inference, one async hook (enqueue)', fmtTime(q), `target ≤ 5 µs; median of ${enqueue.length}`],
      ['dispatch with no hooks bound', fmtTime(median(emptyTimes))],
    ]),
    machineLine(),
  ].join('\n');
}

const isMain = process.argv[1]?.endsWith('bench/hooks.ts');
if (isMain) {
  console.log(await benchHooks());
  process.exit(0);
}
