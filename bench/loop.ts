/**
 * Per-turn runtime overhead of the agent loop: a long task against an instant driver (the replay
 * driver answers without any network), measured end to end, then split into the time spent in the
 * driver and tool components (trace durations) and the rest — the runtime's own work per turn
 * (request building, token accounting, spend admission, trace lines, dispatch).
 */
import { readTrace } from '../runtime/trace/read.ts';
import { ECHO_TOOL } from '../test/loop/kit.ts';
import { openReplay, toolCall } from '../test/loop/replay-kit.ts';
import { fmtMs, median, table } from './stats.ts';

export async function benchLoop(turns = 150): Promise<string> {
  const kit = await openReplay({ tools: [ECHO_TOOL], responses: [toolCall('echo', { text: 'tick' }, 'same-id')], inferenceExtra: `  max_turns: ${turns}` });
  // Warm both components before timing.
  await kit.session.runTask({ taskId: 'warm', contextId: 'w', text: 'warm up', source: 'task_md' });
  const t0 = performance.now();
  const r = await kit.session.runTask({ taskId: 'bench', contextId: 'b', text: 'loop', source: 'task_md' });
  const total = performance.now() - t0;
  const ev = readTrace(kit.session.staged.workdir.trace).events.filter((e) => e.seq !== undefined);
  const start = ev.findIndex((e) => e.event_type === 'task_start' && e.task_id === 'bench');
  const mine = ev.slice(start);
  const infer = mine.filter((e) => e.event_type === 'inference').map((e) => Number(e.duration_ms));
  const tools = mine.filter((e) => e.event_type === 'tool_call').map((e) => Number(e.duration_ms));
  await kit.close();
  const perTurn = total / r.turns;
  const componentMs = (infer.reduce((a, b) => a + b, 0) + tools.reduce((a, b) => a + b, 0)) / r.turns;
  // Per turn, from the trace: wall time between consecutive inference events, and what is left
  // after the driver and tool components (the runtime's own work).
  const inferEv = mine.filter((e) => e.event_type === 'inference');
  const toolEv = mine.filter((e) => e.event_type === 'tool_call');
  const walls: number[] = [];
  const overheads: number[] = [];
  for (let i = 1; i < inferEv.length; i++) {
    const wall = Number(inferEv[i]!.timestamp) - Number(inferEv[i - 1]!.timestamp);
    walls.push(wall);
    overheads.push(wall - Number(inferEv[i]!.duration_ms) - Number(toolEv[i - 1]?.duration_ms ?? 0));
  }
  return [
    `agent loop (${r.turns} turns of tool_call → echo tool, replay driver, no network)`,
    table([
      ['wall time per turn (mean over the task)', fmtMs(perTurn)],
      ['wall time per turn (median)', fmtMs(median(walls))],
      ['driver call per turn (median)', fmtMs(median(infer))],
      ['tool call per turn (median)', fmtMs(median(tools))],
      // Trace durations are whole milliseconds, too coarse for a per-turn median of the sub-ms rest.
      ['runtime overhead per turn (mean of wall − components)', fmtMs(Math.max(0, perTurn - componentMs)), `target ≤ 2 ms; per-turn median ${fmtMs(Math.max(0, median(overheads)))} at 1 ms resolution`],
    ]),
  ].join('\n');
}
