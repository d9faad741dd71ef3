/**
 * Script capsule tasks end to end (a fresh capsule instance per task, ScriptSession.runTask), with
 * pre-instantiated spares off and on, for tasks arriving back to back and 250 ms apart. The
 * capsule runs an empty program, so what is measured is the per-task start: instance, grants,
 * task files, the call and the answer.
 */
import { SPARES } from '../runtime/host/spares.ts';
import { ScriptSession } from '../runtime/script/script-session.ts';
import { demoYaml, program, scriptRegistry, stageYaml } from '../test/script/helpers.ts';
import { fmtMs, median, table } from './stats.ts';

export async function benchScript(tasks = 15): Promise<string> {
  const registry = await scriptRegistry();
  const run = async (spares: number, gapMs: number): Promise<{ ms: number }> => {
    SPARES.max = spares;
    await SPARES.drain();
    const s = await ScriptSession.open(await stageYaml(registry, demoYaml()));
    const times: number[] = [];
    try {
      for (let i = 0; i < tasks + 2; i++) {
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
        const t0 = performance.now();
        const r = await s.runTask({ taskId: `t${i}`, contextId: 'c', text: program() });
        if (r.exit !== 'completed') throw new Error(`task ${i} ended ${r.exit}`);
        // The first two tasks start the component twice; spares begin after that.
        if (i >= 2) times.push(performance.now() - t0);
      }
    } finally {
      await s.close();
    }
    return { ms: median(times) };
  };
  const defaults = SPARES.max;
  const rows: [string, string, string?][] = [];
  for (const gap of [0, 250]) {
    const off = await run(0, gap);
    const on = await run(Math.max(1, defaults), gap);
    const label = gap ? `${gap} ms apart` : 'back to back';
    rows.push([`task, ${label}, spares off`, fmtMs(off.ms)]);
    rows.push([`task, ${label}, spares on`, fmtMs(on.ms), `ratio ${(on.ms / off.ms).toFixed(2)}`]);
  }
  SPARES.max = defaults;
  return [`script capsule tasks (fresh SpiderMonkey capsule instance per task, empty program; median of ${tasks})`, table(rows)].join('\n');
}
