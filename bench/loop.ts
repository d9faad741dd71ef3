/**
 * Per-turn runtime overhead of the agent loop: long tasks against an instant driver (the replay
 * driver component answers without any network) calling the real echo tool component every turn,
 * in two arms alternating round by round: no hooks bound, and three blocking hooks bound (two on
 * on-inference, one on on-tool-call; the hook-script component doing nothing). Per round: wall time
 * per turn, and what is left of it after the driver's and the tool's own call durations (the trace)
 * — the runtime's own work per turn (request building, token accounting, spend admission, trace
 * lines, dispatch) — and, from the hook_call trace events, what is left after the blocking hooks'
 * own call time too (the target's measure: outside the provider and all components).
 */
import { readTrace } from '../runtime/trace/read.ts';
import { ECHO_TOOL } from '../test/loop/kit.ts';
import { openReplay, toolCall, type ReplayHook } from '../test/loop/replay-kit.ts';
import { fmtTime, machineLine, pairedRows, summarize, table } from './paired.ts';

const THREE_BLOCKING: ReplayHook[] = [
  { name: 'watch-a', contract: 'binding: on-inference\n', script: {} },
  { name: 'watch-b', contract: 'binding: on-inference\n', script: {} },
  { name: 'watch-tools', contract: 'binding: on-tool-call\n', script: {} },
];

export async function benchLoop(turns = 60, rounds = 5): Promise<string> {
  const open = (hooks: ReplayHook[]) =>
    openReplay({ tools: [ECHO_TOOL], hooks, responses: [toolCall('echo', { text: 'tick' }, 'same-id')], inferenceExtra: `  max_turns: ${turns}` });
  const kits = [await open([]), await open(THREE_BLOCKING)];
  // Warm every component before timing.
  for (const k of kits) await k.session.runTask({ taskId: 'warm', contextId: 'w', text: 'warm up', source: 'task_md' });
  const wall = kits.map(() => [] as number[]);
  const rest = kits.map(() => [] as number[]);
  const comp = kits.map(() => [] as number[]);
  const hooks = kits.map(() => [] as number[]);
  const bare = kits.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [1, 0] : [0, 1];
    for (const i of order) {
      const kit = kits[i]!;
      const id = `bench-${r}`;
      const t0 = performance.now();
      const rep = await kit.session.runTask({ taskId: id, contextId: 'b', text: 'loop', source: 'task_md' });
      const total = performance.now() - t0;
      const ev = readTrace(kit.session.staged.workdir.trace).events.filter((e) => e.seq !== undefined);
      const mine = ev.slice(ev.findIndex((e) => e.event_type === 'task_start' && e.task_id === id));
      const end = mine.findIndex((e) => e.event_type === 'task_end');
      const inTask = end >= 0 ? mine.slice(0, end + 1) : mine;
      const componentMs = inTask.filter((e) => e.event_type === 'inference' || e.event_type === 'tool_call').reduce((a, e) => a + Number(e.duration_ms), 0);
      // Blocking hook calls' own time (hook_call events; async ones run behind the loop).
      const hookMs = inTask.filter((e) => e.event_type === 'hook_call' && e.mode === 'blocking').reduce((a, e) => a + Number(e.duration_ms), 0);
      bare[i]!.push(Math.max(0, total - componentMs - hookMs) / rep.turns);
      hooks[i]!.push(hookMs / rep.turns);
      wall[i]!.push(total / rep.turns);
      comp[i]!.push(componentMs / rep.turns);
      rest[i]!.push(Math.max(0, total - componentMs) / rep.turns);
    }
  }
  await Promise.all(kits.map((k) => k.close()));
  const names = ['no hooks', 'three blocking hooks'];
  return [
    `agent loop (${turns} turns per task of tool_call → echo tool, replay driver, no network; ${rounds} rounds, arms alternating; per-task means per turn)`,
    table([
      ...pairedRows(
        summarize(
          names.map((n) => `wall per turn, ${n}`),
          wall,
        ),
        fmtTime,
      ),
      ...pairedRows(
        summarize(
          names.map((n) => `driver + tool calls per turn, ${n}`),
          comp,
        ),
        fmtTime,
      ),
      // Trace durations are whole milliseconds; summed over a task their rounding averages out.
      ...pairedRows(
        summarize(
          names.map((n) => `runtime overhead per turn (wall − driver − tool), ${n}`),
          rest,
        ),
        fmtTime,
      ),
      ...pairedRows(
        summarize(
          names.map((n) => `blocking hook calls per turn (hook_call durations), ${n}`),
          hooks,
        ),
        fmtTime,
      ),
      ...pairedRows(
        summarize(
          names.map((n) => `runtime overhead per turn outside all components (wall − driver − tool − hook calls), ${n}`),
          bare,
        ),
        fmtTime,
      ),
    ]),
    '  target: overhead per turn outside the provider and the components ≤ 2 ms with three blocking hooks bound (last rows)',
    machineLine(),
  ].join('\n');
}
