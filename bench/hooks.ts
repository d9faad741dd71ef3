/**
 * HookBus costs (not a test; prints medians and ratios). The same hook component is called three
 * ways: a bare ComponentInstance call of `lifecycle.onInference`, a blocking dispatch through the
 * bus (`bus.inference`, and a policy decision `bus.toolDecision`), and an async dispatch (enqueue
 * only; the calls run behind it). Targets: blocking overhead ≤ 50 µs over the bare call, async
 * enqueue ≤ 5 µs.
 */
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
import { fmtMs, median, table, timeIt } from './stats.ts';

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
  const spec = (name: string, extra: Partial<StagedHook> = {}): StagedHook => ({ name, wasmPath: wasm, executionMode: 'blocking', commitPolicy: 'none', env: { HOOK_SCRIPT: '{}' }, ...extra });
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
  const bareTimes = await timeIt(N, () => bare.call(['lifecycle', 'onInference'], [EV]), 200);

  const blocking = await HookBus.load({ hooks: [spec('fg', { binding: 'on-inference' })], workdir: join(dir, 'b'), sessionId, trace, services });
  const busTimes = await timeIt(N, () => blocking.inference(EV), 200);
  const policy = await HookBus.load({ hooks: [spec('guard', { binding: 'on-tool-call', commitPolicy: 'deny' })], workdir: join(dir, 'p'), sessionId, trace, services });
  const decisionTimes = await timeIt(N, () => policy.toolDecision(TOOL), 200);
  // Interleave once more so drift between the phases does not pose as overhead.
  const bare2 = await timeIt(N, () => bare.call(['lifecycle', 'onInference'], [EV]), 50);
  const bus2 = await timeIt(N, () => blocking.inference(EV), 50);

  const asyncBus = await HookBus.load({ hooks: [spec('bg', { executionMode: 'async' })], workdir: join(dir, 'a'), sessionId, trace, services, queueDepth: 1_000_000 });
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

  const b = median([...bareTimes, ...bare2]);
  const d = median([...busTimes, ...bus2]);
  const p = median(decisionTimes);
  const q = median(enqueue);
  await Promise.all([bare.close(), blocking.close(), policy.close(), asyncBus.close(), noHooks.close()]);
  return [
    `hooks (N=${N}, medians):`,
    table([
      ['bare ComponentInstance call (onInference → none)', fmtMs(b)],
      ['blocking dispatch: bus.inference, one hook', fmtMs(d), `overhead ${fmtMs(d - b)} (target ≤ 50 µs), ratio ${(d / b).toFixed(2)}×`],
      ['policy decision: bus.toolDecision, one policy hook', fmtMs(p), `overhead ${fmtMs(p - b)}, ratio ${(p / b).toFixed(2)}×`],
      ['async dispatch: bus.inference, one async hook (enqueue)', fmtMs(q), `target ≤ 5 µs; ${(b / q).toFixed(0)}× cheaper than the bare call`],
      ['dispatch with no hooks bound', fmtMs(median(emptyTimes))],
    ]),
  ].join('\n');
}

const isMain = process.argv[1]?.endsWith('bench/hooks.ts');
if (isMain) {
  console.log(await benchHooks());
  process.exit(0);
}
