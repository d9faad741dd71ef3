/**
 * `mur run` of a script capsule whose host imports all answer at once runs the capsule and the
 * tools it invokes on the main thread (runtime/script/inline-run.ts, runtime/host/inline.ts): no
 * component worker starts, and the run behaves as in workers — the same trace, the deadline. Any
 * other capsule still runs in component workers.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../runtime/cli/run-command.ts';
import { POOL } from '../../runtime/host/workers.ts';
import { runScriptCapsule } from '../../runtime/script/script-session.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { makeCapsule } from '../registry/helpers.ts';
import { demoYaml, program, publishComponent, stageYaml, tmp, traceOf, useScriptSessions } from './helpers.ts';

const sessions = useScriptSessions();

beforeAll(async () => {
  publishComponent(sessions.registry(), { name: 'wat-spin', version: '1.0.0', wasm: await watFixture('script-wat-spin') });
});

/** The WAT capsule of wat.test.ts: four invokes (two tools, one undeclared name), no WASI. */
const watYaml = `${[
  'name: wat-demo',
  'version: 0.1.0',
  'artifacts:',
  '  - name: wat-demo',
  '    version: 1.0.0',
  '  - name: script-wat-tool',
  '    version: 1.0.0',
  '  - name: echo-tool',
  '    version: 1.0.0',
].join('\n')}\n`;

async function murRun(yaml: string, taskText: string): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const args = [makeCapsule(yaml), '--task', taskText, '--registry', sessions.registry(), '--work-root', tmp('mur-inline-work-')];
  const code = await runCommand(
    args,
    (s) => out.push(s),
    (s) => err.push(s),
  );
  return { code, out, err };
}

describe('mur run of a script capsule on the main thread', () => {
  it('runs a capsule whose imports all answer at once, and its tools, without starting a component worker', async () => {
    const before = POOL.booted;
    const { code, out } = await murRun(watYaml, 'ignored');
    expect(code).toBe(0);
    expect(POOL.booted - before).toBe(0);
    // The same steps as in workers (wat.test.ts): every value crossed the canonical ABI intact.
    expect(out.filter((l) => l.startsWith('tool '))).toEqual([
      expect.stringMatching(/^tool script-wat-tool: ok in \d+ ms$/),
      expect.stringMatching(/^tool echo-tool: ok in \d+ ms$/),
      expect.stringMatching(/^tool not-declared: error in \d+ ms — tool 'not-declared' is not declared in /),
      expect.stringMatching(/^tool script-wat-tool: ok in \d+ ms$/),
    ]);
  });

  it('a capsule with host imports that wait (shell, pulls, message/send) still runs in component workers', async () => {
    const before = POOL.booted;
    const { code } = await murRun(demoYaml(), program({ op: 'invoke', name: 'echo-tool', data: 'hi' }));
    expect(code).toBe(0);
    expect(POOL.booted - before).toBeGreaterThan(0);
  });

  it('stops a capsule that never returns at its deadline (E-HOST-003), with no worker to terminate', async () => {
    const staged = await stageYaml(
      sessions.registry(),
      'name: wat-spin\nversion: 0.1.0\nartifacts:\n  - name: wat-spin\n    version: 1.0.0\ncapabilities:\n  limits:\n    deadline_seconds: 1\n',
    );
    const before = POOL.booted;
    const errs: string[] = [];
    const code = await runScriptCapsule(staged, 'spin', { out: () => {}, err: (s) => errs.push(s), quiet: true });
    expect(code).toBe(1);
    expect(POOL.booted - before).toBe(0);
    expect(errs[0]).toMatch(
      /^task failed: wat-spin: run\.run did not finish within its 1000 ms deadline \(capabilities\.limits\.deadline_seconds\); the instance was stopped \[E-HOST-003\]/,
    );
    const trace = traceOf(staged);
    expect(trace.find((e) => e.event_type === 'task_end')).toMatchObject({ exit_status: 'failed' });
    expect(trace.at(-1)).toMatchObject({ event_type: 'session_end', exit_status: 'failed' });
  });
});
