/** murmur:shell/execute from a real script capsule component: the agent-loop shell rules. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptSession } from '../../runtime/script/script-session.ts';
import { demoYaml, program, results, task, traceOf, useScriptSessions } from './helpers.ts';

const sessions = useScriptSessions();

function session(capabilities: string, hostEnv?: NodeJS.ProcessEnv): Promise<ScriptSession> {
  return sessions.open(demoYaml({ capabilities }), hostEnv);
}

describe('shell execute', () => {
  it('runs an allowlisted binary; a non-zero exit is data', async () => {
    const s = await session('  shell:\n    allow: [echo, sh]');
    const out = await s.runTask(
      task(
        program(
          { op: 'shell', binary: 'echo', args: ['hello', 'world'] },
          { op: 'shell', binary: 'sh', args: ['-c', 'echo oops >&2; exit 3'] },
          { op: 'shell', binary: 'sh', args: ['-c', 'pwd'] },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [echo, fail, pwd] = results(out.text);
    expect(echo).toEqual({ op: 'shell', ok: true, value: { exitCode: 0, stdout: 'hello world\n', stderr: '', truncated: false, fullOutputPath: null } });
    expect(fail!.value).toMatchObject({ exitCode: 3, stdout: '', stderr: 'oops\n', truncated: false });
    // It runs in the capsule's granted directory.
    expect(pwd!.value.stdout.trim()).toBe(s.grantedDir);
    const shells = traceOf(s.staged).filter((e) => e.event_type === 'shell');
    expect(shells).toHaveLength(3);
    expect(shells[0]).toMatchObject({ caller: 'capsule', argv: ['hello', 'world'], exit_code: 0, stdout_bytes: 12, stderr_bytes: 0 });
    expect(shells[0].binary).toMatch(/\/echo$/);
    expect(shells[1]).toMatchObject({ exit_code: 3, script: 'echo oops >&2; exit 3' });
    expect(traceOf(s.staged).find((e) => e.event_type === 'task_end')).toMatchObject({ shell_calls: 3 });
  });

  it('refuses a binary outside the allowlist before spawning anything', async () => {
    const s = await session('  shell:\n    allow: [echo]');
    const out = await s.runTask(
      task(
        program(
          { op: 'shell', binary: 'touch', args: ['planted.txt'] },
          { op: 'shell', binary: '/bin/echo', args: ['x'] },
          { op: 'shell', binary: 'echo', args: ['still fine'] },
        ),
      ),
    );
    const [touch, abs, ok] = results(out.text);
    expect(touch!.ok).toBe(false);
    expect(touch!.error).toBe('shell binary "touch" is not in capabilities.shell.allow (allowed: "echo") [E-SHELL-001]');
    expect(abs!.error).toMatch(/"\/bin\/echo" is not in capabilities\.shell\.allow/);
    expect(ok!.value.stdout).toBe('still fine\n');
    expect(existsSync(path.join(s.grantedDir, 'planted.txt'))).toBe(false);
    expect(traceOf(s.staged).filter((e) => e.event_type === 'shell')[0]).toMatchObject({ binary: 'touch', refused: true });
  });

  it('a capsule with no shell block can run nothing', async () => {
    const s = await session('  filesystem:\n    scope: .');
    const out = await s.runTask(task(program({ op: 'shell', binary: 'echo', args: ['x'] })));
    expect(results(out.text)[0]!.error).toMatch(/\(allowed: none\) \[E-SHELL-001\]/);
  });

  it('truncates output past 16 KiB and points at the full log, which the capsule can read back', async () => {
    const s = await session('  shell:\n    allow: [sh]');
    const out = await s.runTask(
      task(JSON.stringify({ steps: [{ op: 'shell', binary: 'sh', args: ['-c', "head -c 40000 /dev/zero | tr '\\0' x; echo tail >&2"] }] })),
    );
    const [r] = results(out.text);
    expect(r!.value.truncated).toBe(true);
    expect(r!.value.stdout).toBe('x'.repeat(16384));
    expect(r!.value.stderr).toBe('tail\n');
    expect(r!.value.fullOutputPath).toMatch(/^logs\/shell-\d+\.log$/);
    const again = await s.runTask(task(program({ op: 'read', path: r!.value.fullOutputPath })));
    const log = results(again.text)[0]!.value as string;
    expect(log).toContain(`--- stdout (40000 bytes) ---\n${'x'.repeat(40000)}`);
    expect(log).toContain('--- stderr (5 bytes) ---\ntail');
    expect(traceOf(s.staged).find((e) => e.event_type === 'shell')).toMatchObject({
      truncated: true,
      full_output_path: r!.value.fullOutputPath,
      stdout_bytes: 40000,
    });
  });

  it('strips credential-shaped variables; the capsule’s own env pairs are added', async () => {
    const s = await session('  shell:\n    allow: [sh]', { PATH: process.env.PATH, PLAIN: 'plain', MY_API_KEY: 'sk-secret', GITHUB_TOKEN: 'ghp-secret' });
    const out = await s.runTask(
      task(program({ op: 'shell', binary: 'sh', args: ['-c', 'echo "$PLAIN|$MY_API_KEY|$GITHUB_TOKEN|$FROM_CAPSULE|$HOME"'], env: [['FROM_CAPSULE', 'v']] })),
    );
    const [r] = results(out.text);
    expect(r!.value.stdout).toBe(`plain|||v|${s.grantedDir}\n`);
  });

  it('a binary that cannot be spawned is an err, not a fault', async () => {
    const s = await session('  shell:\n    allow: [no-such-binary-murmur]');
    const out = await s.runTask(task(program({ op: 'shell', binary: 'no-such-binary-murmur', args: [] }, { op: 'ping' })));
    const [r, ping] = results(out.text);
    expect(r!.ok).toBe(false);
    expect(r!.error).toMatch(/cannot start shell binary "no-such-binary-murmur".*not found on PATH.*\[E-SHELL-002\]/);
    expect(ping!.value).toBe('pong');
  });
});
