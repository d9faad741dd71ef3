/**
 * murmur:tool-registry/invoke and murmur:artifact-manager/manage from a real script capsule
 * component, end to end through a staged capsule and a real registry.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ScriptSession } from '../../runtime/script/script-session.ts';
import { readLock, upsertLock, writeLock } from '../../runtime/registry/lock.ts';
import { demoYaml, program, results, stageYaml, task, traceOf, useScriptSessions } from './helpers.ts';

const sessions = useScriptSessions();

function session(yaml: string, hostEnv?: NodeJS.ProcessEnv): Promise<ScriptSession> {
  return sessions.open(yaml, hostEnv);
}

describe('invoke', () => {
  it('calls a declared tool, refuses an undeclared one naming it and the manifest, and traces both', async () => {
    const s = await session(demoYaml());
    const out = await s.runTask(
      task(
        program(
          { op: 'invoke', name: 'echo-tool', data: { q: 'hi' } },
          { op: 'invoke', name: 'probe-tool', data: { op: 'ping' } },
          { op: 'invoke', name: 'echo-tool', data: 'second' },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [first, unlisted, second] = results(out.text);
    expect(first).toMatchObject({
      ok: true,
      value: {
        status: 'passed',
        summary: 'echo #1',
        truncated: false,
        metadata: [
          ['state_effect', 'read'],
          ['resource_id', 'echo:10'],
        ],
      },
    });
    expect(JSON.parse(first!.value.data)).toEqual({ echo: '{"q":"hi"}', calls: 1 });
    expect(unlisted!.ok).toBe(false);
    expect(unlisted!.error).toContain(`tool 'probe-tool' is not declared in ${s.staged.manifest.file}`);
    expect(unlisted!.error).toContain('callable tools: echo-tool');
    expect(unlisted!.error).toContain('E-SCRIPT-020');
    // The tool instance is kept for the session: its state carries over between calls.
    expect(second!.value.summary).toBe('echo #2');

    const calls = traceOf(s.staged).filter((e) => e.event_type === 'tool_call');
    expect(calls).toHaveLength(3);
    expect(calls[0]).toMatchObject({
      caller: 'capsule',
      tool_name: 'echo-tool',
      input: { q: 'hi' },
      input_bytes: 10,
      status: 'ok',
      tool_status: 'passed',
      state_effect: 'read',
      resource_id: 'echo:10',
    });
    expect(typeof calls[0].duration_ms).toBe('number');
    expect(calls[1]).toMatchObject({ tool_name: 'probe-tool', status: 'error', output_bytes: 0 });
    expect(calls[1].error).toContain('is not declared');
    expect(calls[2]).toMatchObject({ tool_name: 'echo-tool', input: 'second', status: 'ok' });
    const end = traceOf(s.staged).find((e) => e.event_type === 'task_end');
    expect(end).toMatchObject({ exit_status: 'ok', tool_calls: 3 });
  });

  it('refuses invoking the capsule component itself or a non-tool artifact', async () => {
    const s = await session(demoYaml());
    const out = await s.runTask(task(program({ op: 'invoke', name: 'demo', data: '{}' })));
    const [self] = results(out.text);
    expect(self!.ok).toBe(false);
    expect(self!.error).toMatch(/tool 'demo' is the capsule component itself.*E-SCRIPT-021/);
  });

  it('a tool that reports failure is an ok result with its status; a tool that faults is an err', async () => {
    const s = await session(demoYaml({ artifacts: '  - name: probe-tool\n    version: 1.0.0' }));
    const out = await s.runTask(
      task(
        program(
          { op: 'invoke', name: 'probe-tool', data: { op: 'read', path: 'no-such-file.txt' } },
          { op: 'invoke', name: 'probe-tool', data: { op: 'trap' } },
          { op: 'invoke', name: 'probe-tool', data: { op: 'ping' } },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [failed, trapped, after] = results(out.text);
    expect(failed).toMatchObject({ ok: true, value: { status: 'failed' } });
    expect(trapped!.ok).toBe(false);
    expect(trapped!.error).toMatch(/^tool 'probe-tool' failed: probe-tool: run\.run trapped.*E-HOST-005/);
    // The faulted tool instance was replaced: the next call works.
    expect(JSON.parse(after!.value.data)).toEqual({ ok: true, value: 'pong' });
    const calls = traceOf(s.staged).filter((e) => e.event_type === 'tool_call');
    expect(calls.map((c) => [c.status, c.tool_status])).toEqual([
      ['error', 'failed'],
      ['error', undefined],
      ['ok', 'passed'],
    ]);
  });

  it('runs the invoked tool under its own grant, never wider than the capsule’s', async () => {
    const env = { ...process.env, GRANTED: 'yes', ALSO: 'also' };
    const yaml = `${[
      'name: demo',
      'version: 0.1.0',
      'artifacts:',
      '  - name: demo',
      '    version: 1.0.0',
      '    capabilities:',
      '      env:',
      '        allow: [GRANTED]',
      '  - name: probe-tool',
      '    version: 1.0.0',
      '    capabilities:',
      '      filesystem:',
      '        scope: tooldata',
      'capabilities:',
      '  env:',
      '    allow: [GRANTED, ALSO]',
    ].join('\n')}\n`;
    const s = await session(yaml, env);
    const out = await s.runTask(
      task(
        program(
          { op: 'write', path: 'secret.txt', text: 'capsule-only' },
          { op: 'envAll' },
          { op: 'invoke', name: 'probe-tool', data: { op: 'read', path: 'secret.txt' } },
          { op: 'invoke', name: 'probe-tool', data: { op: 'envAll' } },
          { op: 'invoke', name: 'probe-tool', data: { op: 'write', path: 'from-tool.txt', text: 'tool wrote this' } },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [wrote, capsuleEnv, toolRead, toolEnv, toolWrite] = results(out.text);
    expect(wrote!.ok).toBe(true);
    expect(capsuleEnv!.value).toEqual(['GRANTED']);
    // The tool's preopen is <workdir>/tooldata: the capsule's file is not there.
    expect(JSON.parse(toolRead!.value.data)).toMatchObject({ ok: false });
    // The tool inherits env [GRANTED, ALSO] from the capsule-wide block, clamped to the capsule
    // component's own [GRANTED].
    expect(JSON.parse(toolEnv!.value.data)).toEqual({ ok: true, value: ['GRANTED'] });
    expect(JSON.parse(toolWrite!.value.data).ok).toBe(true);
    expect(readFileSync(path.join(s.staged.workdir.dir, 'tooldata', 'from-tool.txt'), 'utf8')).toBe('tool wrote this');
    expect(existsSync(path.join(s.staged.workdir.dir, 'from-tool.txt'))).toBe(false);
  });
});

describe('artifact manager', () => {
  it('list, describe, diagnostics report the session; search and remove are errors', async () => {
    const s = await session(demoYaml());
    const out = await s.runTask(
      task(
        program(
          { op: 'list' },
          { op: 'describe', name: 'echo-tool' },
          { op: 'describe', name: 'ghost' },
          { op: 'diagnostics' },
          { op: 'search', query: 'echo' },
          { op: 'remove', name: 'echo-tool' },
        ),
      ),
    );
    const [list, desc, ghost, diag, search, remove] = results(out.text);
    expect(list!.value).toEqual([
      { name: 'demo', version: '1.0.0', runtime: 'wasm' },
      { name: 'echo-tool', version: '1.0.0', runtime: 'wasm' },
    ]);
    expect(desc!.value).toMatchObject({
      name: 'echo-tool',
      version: '1.0.0',
      description: 'The echo-tool artifact.',
      runtime: 'wasm',
      inputSchema: '{"type":"object"}',
    });
    expect(ghost).toMatchObject({ ok: false });
    expect(ghost!.error).toContain("artifact 'ghost' is not installed in this session");
    expect(diag!.value.capsuleId).toBe(s.staged.sessionId);
    expect(diag!.value.installed.map((a: { name: string }) => a.name)).toEqual(['demo', 'echo-tool']);
    expect(search!.error).toMatch(/not implemented/);
    expect(remove!.error).toMatch(/not implemented/);
  });

  it('pull installs a new artifact, updates murmur.lock, and it is invokable at once', async () => {
    const s = await session(demoYaml());
    const out = await s.runTask(
      task(
        program(
          { op: 'invoke', name: 'late-echo', data: 'before' },
          { op: 'pull', name: 'late-echo', version: '2.0.0' },
          { op: 'list' },
          { op: 'describe', name: 'late-echo' },
          { op: 'invoke', name: 'late-echo', data: 'after' },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [before, pull, list, desc, after] = results(out.text);
    expect(before!.error).toContain("tool 'late-echo' is not declared");
    expect(pull).toEqual({ op: 'pull', ok: true, value: { name: 'late-echo', version: '2.0.0', runtime: 'wasm' } });
    expect(list!.value.map((a: { name: string }) => a.name)).toEqual(['demo', 'echo-tool', 'late-echo']);
    expect(desc!.value).toMatchObject({ name: 'late-echo', version: '2.0.0' });
    expect(JSON.parse(after!.value.data)).toEqual({ echo: 'after', calls: 1 });
    expect(existsSync(path.join(s.staged.workdir.tools, 'late-echo', 'late-echo.wasm'))).toBe(true);
    expect(readLock(s.staged.capsuleDir)!.artifacts.map((a) => `${a.name}@${a.version}`)).toEqual(['demo@1.0.0', 'echo-tool@1.0.0', 'late-echo@2.0.0']);
    const trace = traceOf(s.staged);
    expect(trace.find((e) => e.event_type === 'artifact_installed')).toMatchObject({ name: 'late-echo', version: '2.0.0', origin: 'pull' });
    expect(trace.filter((e) => e.event_type === 'tool_call').at(-1)).toMatchObject({ tool_name: 'late-echo', status: 'ok', origin: 'pull' });
  });

  it('a pull that conflicts with a murmur.lock pin is refused and nothing is written', async () => {
    const staged = await stageYaml(sessions.registry(), demoYaml());
    const lock = readLock(staged.capsuleDir)!;
    writeLock(staged.capsuleDir, upsertLock(lock, [{ name: 'late-echo', version: '2.0.0', sha256: '0'.repeat(64) }]));
    const lockBefore = readFileSync(staged.lockPath, 'utf8');
    const s = sessions.track(await ScriptSession.open(staged));
    const out = await s.runTask(
      task(
        program(
          { op: 'pull', name: 'late-echo', version: '2.0.0' },
          { op: 'pull', name: 'ghost', version: '1.0.0' },
          { op: 'invoke', name: 'late-echo', data: 'x' },
          { op: 'list' },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [pinned, missing, invoke, list] = results(out.text);
    expect(pinned!.ok).toBe(false);
    expect(pinned!.error).toMatch(
      /^pull late-echo 2\.0\.0 refused: artifact 'late-echo' 2\.0\.0 has sha256 [0-9a-f]{64} but murmur\.lock pins 0{64} \[E-REG-004\]/,
    );
    expect(missing!.error).toMatch(/E-REG-001/);
    expect(invoke!.error).toContain('is not declared');
    expect(list!.value.map((a: { name: string }) => a.name)).toEqual(['demo', 'echo-tool']);
    expect(existsSync(path.join(staged.workdir.tools, 'late-echo'))).toBe(false);
    expect(readFileSync(staged.lockPath, 'utf8')).toBe(lockBefore);
    expect(traceOf(staged).some((e) => e.event_type === 'artifact_installed')).toBe(false);
  });

  it('a tool component changed on disk after staging is refused at load', async () => {
    const s = await session(demoYaml());
    writeFileSync(path.join(s.staged.workdir.tools, 'echo-tool', 'echo-tool.wasm'), readFileSync(path.join(s.staged.workdir.tools, 'demo', 'demo.wasm')));
    const out = await s.runTask(task(program({ op: 'invoke', name: 'echo-tool', data: 'x' })));
    const [r] = results(out.text);
    expect(r!.ok).toBe(false);
    expect(r!.error).toMatch(/tool 'echo-tool' failed: echo-tool: SHA-256 mismatch.*E-HOST-002/);
  });
});
