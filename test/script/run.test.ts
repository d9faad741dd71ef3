/**
 * The entry points: `mur run` on a script capsule (runCommand → runScriptCapsule), runScriptTask
 * for `mur serve`, and how the capsule component is found (artifact or capsule.wasm).
 */
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../runtime/cli/run-command.ts';
import { drainWorkerPool } from '../../runtime/host/index.ts';
import { componentFileHashes } from '../../runtime/host/file-digest.ts';
import { POOL } from '../../runtime/host/workers.ts';
import { closeScriptSession, runScriptCapsule, runScriptTask, ScriptSession } from '../../runtime/script/script-session.ts';
import { demoYaml, fixtures, program, results, stageYaml, task, tmp, traceOf, useScriptSessions } from './helpers.ts';
import { makeCapsule } from '../registry/helpers.ts';
import { writeFileSync } from 'node:fs';

const sessions = useScriptSessions();

const toolOnlyYaml = 'name: demo\nversion: 0.1.0\nartifacts:\n  - name: echo-tool\n    version: 1.0.0\n';

describe('mur run on a script capsule', () => {
  it('stages, runs the task, prints each step and the answer, exits 0', async () => {
    const dir = makeCapsule(demoYaml());
    const lines: string[] = [];
    const code = await runCommand(
      [dir, '--task', program({ op: 'invoke', name: 'echo-tool', data: 'hi' }), '--registry', sessions.registry(), '--work-root', tmp('mur-script-work-')],
      (s) => lines.push(s),
    );
    expect(code).toBe(0);
    const text = lines.join('\n');
    expect(text).toMatch(/^staged demo 0\.1\.0: 2 artifact\(s\), murmur\.lock created/);
    expect(text).toContain('capsule component: artifact demo (script capsule)');
    expect(text).toMatch(/tool echo-tool: ok in \d+ ms/);
    const answer = lines.find((l) => l.startsWith('{"results"'))!;
    expect(JSON.parse(JSON.parse(answer).results[0].value.data)).toEqual({ echo: 'hi', calls: 1 });
    const tracePath = lines.at(-1)!.replace(/^trace: /, '');
    const events = readFileSync(tracePath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).event_type);
    expect(events).toEqual(['session_start', 'task_start', 'tool_call', 'task_end', 'session_end']);
  });

  it('boots no component worker ahead of an instance: none waiting or scheduled when the run ends', async () => {
    await drainWorkerPool();
    const dir = makeCapsule(demoYaml());
    const code = await runCommand(
      [
        dir,
        '--quiet',
        '--task',
        program({ op: 'invoke', name: 'echo-tool', data: 'hi' }),
        '--registry',
        sessions.registry(),
        '--work-root',
        tmp('mur-script-work-'),
      ],
      () => {},
    );
    expect(code).toBe(0);
    expect({ waiting: POOL.idleCount(), scheduled: POOL.replenishScheduled }).toEqual({ waiting: 0, scheduled: false });
  });

  it('reads and hashes a capsule.wasm of the capsule folder once: the start transpiles it, then finds and loads it', async () => {
    const dir = makeCapsule('name: solo\nversion: 0.1.0\n');
    copyFileSync((await fixtures()).capsule, path.join(dir, 'capsule.wasm'));
    const before = componentFileHashes();
    const code = await runCommand([dir, '--quiet', '--task', program(), '--registry', sessions.registry(), '--work-root', tmp('mur-script-work-')], () => {});
    expect(code).toBe(0);
    expect(componentFileHashes() - before).toBe(1);
  });

  it('a failing task prints the reason, the field and the fix to stderr and exits 1; --quiet prints only that', async () => {
    const staged = await stageYaml(sessions.registry(), demoYaml({ capabilities: '  limits:\n    deadline_seconds: 4' }));
    const lines: string[] = [];
    const errs: string[] = [];
    const code = await runScriptCapsule(staged, program({ op: 'spin' }), { out: (s) => lines.push(s), err: (s) => errs.push(s), quiet: true });
    expect(code).toBe(1);
    expect(lines).toEqual([]);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatch(
      /^task failed: demo: (run\.run|instantiate) did not finish within its 4000 ms deadline \(capabilities\.limits\.deadline_seconds\); the instance was stopped \[E-HOST-003\]\n {2}hint: raise capabilities\.limits\.deadline_seconds in murmur\.yaml/,
    );
    const trace = traceOf(staged);
    expect(trace.at(-1)).toMatchObject({ event_type: 'session_end', exit_status: 'failed', tasks: 1 });
    expect(trace.find((e) => e.event_type === 'task_start')).toMatchObject({ source: 'task_md', trust: 'trusted' });
  });
});

describe('runScriptTask (mur serve)', () => {
  it('keeps one session across tasks; closeScriptSession ends it', async () => {
    const staged = await stageYaml(sessions.registry(), demoYaml());
    const a = await runScriptTask(staged, task(program({ op: 'invoke', name: 'echo-tool', data: 'one' })));
    const b = await runScriptTask(staged, task(program({ op: 'invoke', name: 'echo-tool', data: 'two' }), { trust: 'trusted' }));
    expect(a.exit).toBe('completed');
    // Same session, same tool instance: the echo counter carries over.
    expect(results(b.text)[0]!.value.summary).toBe('echo #2');
    await closeScriptSession(staged, 'ok');
    const types = traceOf(staged).map((e) => e.event_type);
    expect(types).toEqual(['session_start', 'task_start', 'tool_call', 'task_end', 'task_start', 'tool_call', 'task_end', 'session_end']);
    expect(
      traceOf(staged)
        .filter((e) => e.event_type === 'task_start')
        .map((e) => [e.source, e.trust]),
    ).toEqual([
      ['a2a', 'untrusted'],
      ['a2a', 'trusted'],
    ]);
  });

  it('a capsule that cannot open fails the task with the reason', async () => {
    const staged = await stageYaml(sessions.registry(), toolOnlyYaml);
    const r = await runScriptTask(staged, task('x'));
    expect(r.exit).toBe('failed');
    expect(r.reason).toMatch(/script capsule 'demo' has no capsule component \[E-SCRIPT-001\]/);
  });
});

describe('the capsule component', () => {
  it('can be capsule.wasm in the capsule folder (reference convention)', async () => {
    const f = await fixtures();
    const staged = await stageYaml(sessions.registry(), toolOnlyYaml, { 'capsule.wasm': readFileSync(f.capsule) });
    const s = sessions.track(await ScriptSession.open(staged));
    expect(s.capsule.origin).toBe('file');
    const out = await s.runTask(task(program({ op: 'invoke', name: 'echo-tool', data: 'x' })));
    expect(results(out.text)[0]!.ok).toBe(true);
    expect(traceOf(staged)[0]).toMatchObject({
      event_type: 'session_start',
      kind: 'script',
      capsule_component: { origin: 'file', path: path.join(staged.capsuleDir, 'capsule.wasm') },
      tools_declared: ['echo-tool'],
    });
  });

  it('is refused when missing, ambiguous, or not a capsule', async () => {
    const f = await fixtures();
    const none = await stageYaml(sessions.registry(), toolOnlyYaml);
    await expect(ScriptSession.open(none)).rejects.toMatchObject({ code: 'E-SCRIPT-001' });

    const both = await stageYaml(sessions.registry(), demoYaml(), { 'capsule.wasm': readFileSync(f.capsule) });
    await expect(ScriptSession.open(both)).rejects.toMatchObject({
      code: 'E-SCRIPT-002',
      message: expect.stringContaining("two capsule components: the artifact 'demo' and capsule.wasm"),
    });

    const several = await stageYaml(sessions.registry(), toolOnlyYaml, { 'a.wasm': readFileSync(f.capsule), 'b.wasm': readFileSync(f.capsule) });
    await expect(ScriptSession.open(several)).rejects.toMatchObject({
      code: 'E-SCRIPT-002',
      message: expect.stringContaining('several root .wasm files (a.wasm, b.wasm)'),
    });

    const toolAsCapsule = await stageYaml(sessions.registry(), toolOnlyYaml, { 'capsule.wasm': readFileSync(f.echo) });
    await expect(ScriptSession.open(toolAsCapsule)).rejects.toMatchObject({
      code: 'E-SCRIPT-003',
      message: expect.stringContaining('does not export murmur:capsule/run@0.1.0 (it exports murmur:tool/run@0.1.0)'),
    });

    const agent = await stageYaml(sessions.registry(), demoYaml());
    await expect(ScriptSession.open({ ...agent, manifest: { ...agent.manifest, kind: 'agent' } })).rejects.toMatchObject({ code: 'E-SCRIPT-005' });
  });

  it('a tool component, or bytes that are no component, are refused at open', async () => {
    const f = await fixtures();
    const staged = await stageYaml(sessions.registry(), toolOnlyYaml, { 'capsule.wasm': readFileSync(f.probe) });
    await expect(ScriptSession.open(staged)).rejects.toMatchObject({ code: 'E-SCRIPT-003' });
    writeFileSync(path.join(staged.capsuleDir, 'capsule.wasm'), 'not wasm');
    await expect(ScriptSession.open(staged)).rejects.toMatchObject({ code: 'E-HOST-001' });
  });
});
