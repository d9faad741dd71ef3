import { existsSync, realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MurError } from '../../runtime/errors.ts';
import { runShell, SHELL_OUTPUT_LIMIT, ShellNotAllowedError, shellEventIdentity } from '../../runtime/shell/index.ts';

let workdir: string;
const hostEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };

beforeEach(async () => {
  workdir = realpathSync(await mkdtemp(path.join(os.tmpdir(), 'shell-')));
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

const run = (binary: string, args: string[], extra: Partial<Parameters<typeof runShell>[0]> = {}) =>
  runShell({ binary, args, workdir, allow: ['sh', 'bash', 'echo', 'env', 'pwd', 'cat', 'head', 'nonexistent-binary-xyz'], env: hostEnv, ...extra });

function which(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = path.join(dir, name);
    if (existsSync(p)) return realpathSync(p);
  }
  throw new Error(`${name} not on PATH`);
}

describe('shell tool: allowlist', () => {
  it('a binary not in capabilities.shell.allow is refused before spawn, naming the binary and the field', async () => {
    const marker = path.join(workdir, 'touched');
    const err = await runShell({ binary: 'touch', args: [marker], workdir, allow: ['echo', 'sh'], env: hostEnv }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ShellNotAllowedError);
    expect((err as MurError).code).toBe('E-SHELL-001');
    expect((err as MurError).message).toContain('"touch"');
    expect((err as MurError).message).toContain('capabilities.shell.allow');
    expect((err as MurError).location?.field).toBe('capabilities.shell.allow');
    expect((err as MurError).hint).toMatch(/add "touch"/);
    expect(existsSync(marker)).toBe(false);
  });

  it('matching is on the exact invoked name: an allowed bare name does not allow a path to it', async () => {
    await expect(runShell({ binary: which('echo'), args: ['x'], workdir, allow: ['echo'], env: hostEnv })).rejects.toBeInstanceOf(ShellNotAllowedError);
    await expect(runShell({ binary: './echo', args: ['x'], workdir, allow: ['echo'], env: hostEnv })).rejects.toBeInstanceOf(ShellNotAllowedError);
  });
});

describe('shell tool: resolution and identity (shell-event fields)', () => {
  it('binary resolves against PATH to a canonical absolute path', async () => {
    const r = await run('sh', ['-c', 'true']);
    expect(r.identity.binary).toBe(which('sh'));
    expect(path.isAbsolute(r.identity.binary)).toBe(true);
    expect(r.identity.resolved).toBe(true);
  });

  it('an unresolved name stays the bare name, and spawning it is a spawn failure (E-SHELL-002)', async () => {
    const id = await shellEventIdentity({ binary: 'nonexistent-binary-xyz', args: [], workdir, env: hostEnv });
    expect(id).toMatchObject({ binary: 'nonexistent-binary-xyz', resolved: false });
    const err = await run('nonexistent-binary-xyz', []).catch((e: unknown) => e);
    expect((err as MurError).code).toBe('E-SHELL-002');
    expect((err as MurError).message).toMatch(/not found on PATH/);
  });

  it('records the exact argv and, for an interpreter called with -c, the script; command is a ≤200-char display string', async () => {
    const script = `echo ${'x'.repeat(300)}`;
    const r = await run('sh', ['-c', script, 'arg0', 'a b']);
    expect(r.identity.argv).toEqual(['-c', script, 'arg0', 'a b']);
    expect(r.identity.script).toBe(script);
    expect(r.identity.command).toBe(script.slice(0, 200));
    const e = await run('echo', ['hello', 'two words']);
    expect(e.identity.script).toBeUndefined();
    expect(e.identity.command).toBe("hello 'two words'");
    const ec = await shellEventIdentity({ binary: 'bash', args: ['-e', '-o', 'pipefail', '-xc', 'ls | wc -l'], workdir, env: hostEnv });
    expect(ec.script).toBe('ls | wc -l');
    expect((await shellEventIdentity({ binary: 'bash', args: ['script.sh', '-c'], workdir, env: hostEnv })).script).toBeUndefined();
  });

  it('shellEventIdentity runs nothing (it is built at the decision point, before the spawn)', async () => {
    const marker = path.join(workdir, 'ran');
    const id = await shellEventIdentity({ binary: 'sh', args: ['-c', `echo > ${marker}`], workdir, env: hostEnv });
    expect(id.script).toBe(`echo > ${marker}`);
    expect(existsSync(marker)).toBe(false);
    // and runShell executes exactly that identity
    await run('sh', [], { identity: id });
    expect(existsSync(marker)).toBe(true);
  });
});

describe('shell tool: process environment', () => {
  it('spawns without a shell: nothing is expanded', async () => {
    const r = await run('echo', ['$HOME', '*', '`id`', '$(id)']);
    expect(r.stdout).toBe('$HOME * `id` $(id)\n');
  });

  it('cwd is the workdir and HOME is inside the workdir', async () => {
    const r = await run('sh', ['-c', 'pwd; echo "$HOME"']);
    expect(r.stdout).toBe(`${workdir}\n${workdir}\n`);
  });

  it('credential-shaped env vars are stripped, plus the manifest strip globs', async () => {
    const env = {
      ...hostEnv,
      OPENAI_API_KEY: 'sk-1',
      ANTHROPIC_API_KEY: 'sk-2',
      GITHUB_TOKEN: 'ghp',
      AWS_REGION: 'eu-west-1',
      DB_PASSWORD: 'pw',
      MY_SECRET: 's',
      SSH_AUTH_SOCK: '/tmp/agent',
      KUBECONFIG: '/k',
      CUSTOM_THING: 'manifest strips this',
      KEEP_ME: 'kept',
    };
    const r = await run('env', [], { env, stripEnvGlobs: ['CUSTOM_*'] });
    const names = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('=')[0]);
    expect(names).toContain('KEEP_ME');
    expect(names).toContain('PATH');
    for (const gone of [
      'OPENAI_API_KEY',
      'ANTHROPIC_API_KEY',
      'GITHUB_TOKEN',
      'AWS_REGION',
      'DB_PASSWORD',
      'MY_SECRET',
      'SSH_AUTH_SOCK',
      'KUBECONFIG',
      'CUSTOM_THING',
    ]) {
      expect(names).not.toContain(gone);
    }
    expect(r.strippedEnv).toEqual([
      'ANTHROPIC_API_KEY',
      'AWS_REGION',
      'CUSTOM_THING',
      'DB_PASSWORD',
      'GITHUB_TOKEN',
      'KUBECONFIG',
      'MY_SECRET',
      'OPENAI_API_KEY',
      'SSH_AUTH_SOCK',
    ]);
  });
});

describe('shell tool: results', () => {
  it('a non-zero exit is data, not an error', async () => {
    const r = await run('sh', ['-c', 'echo out; echo err >&2; exit 3']);
    expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n', truncated: false, timedOut: false });
    expect(r.fullOutputPath).toBeUndefined();
  });

  it('stdout over 16 KiB is cut, truncated: true, full output written under the workdir and its path returned', async () => {
    const r = await run('sh', ['-c', `head -c 20000 /dev/zero | tr '\\0' a; echo small >&2`]);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.stdout)).toBe(SHELL_OUTPUT_LIMIT);
    expect(r.stdoutBytes).toBe(20000);
    expect(r.stderr).toBe('small\n');
    expect(r.fullOutputPath).toMatch(/^logs\/shell-\d+(-\d+)?\.log$/);
    const log = await readFile(path.join(workdir, r.fullOutputPath!), 'utf8');
    expect(log).toContain(`--- stdout (20000 bytes) ---\n${'a'.repeat(20000)}\n`);
    expect(log).toContain('--- stderr (6 bytes) ---\nsmall\n');
  });

  it('stderr over 16 KiB truncates too; big outputs (8 MiB) are spilled, not held in memory', async () => {
    const r = await run('sh', ['-c', `head -c 8388608 /dev/zero | tr '\\0' b; head -c 17000 /dev/zero | tr '\\0' e >&2; exit 1`]);
    expect(r).toMatchObject({ exitCode: 1, truncated: true, stdoutBytes: 8388608, stderrBytes: 17000 });
    expect(r.stderr.length).toBe(SHELL_OUTPUT_LIMIT);
    const log = await readFile(path.join(workdir, r.fullOutputPath!), 'utf8');
    const out = log.slice(log.indexOf('--- stdout (8388608 bytes) ---\n') + 31);
    expect(out.startsWith(`${'b'.repeat(8388608)}\n--- stderr (17000 bytes) ---\n${'e'.repeat(17000)}\n`)).toBe(true);
    // no spill leftovers
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(path.join(workdir, 'logs'))).filter((n) => n.endsWith('.part'))).toEqual([]);
  });

  it('cuts on a UTF-8 character boundary', async () => {
    // 'é' is 2 bytes; an odd prefix byte makes a naive 16384-byte cut split one
    const r = await run('sh', ['-c', `printf x; i=0; while [ $i -lt 9000 ]; do printf 'é'; i=$((i+1)); done`]);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.stdout)).toBe(SHELL_OUTPUT_LIMIT - 1);
    expect(r.stdout).not.toContain('\uFFFD');
  });

  it('a signal death maps to 128 + signal', async () => {
    const r = await run('sh', ['-c', 'kill -9 $$']);
    expect(r.exitCode).toBe(137);
    expect(r.signal).toBe('SIGKILL');
  });

  it('a timeout kills the process (and its children) and is data', async () => {
    const r = await run('sh', ['-c', 'sleep 30; echo done'], { timeoutMs: 100 });
    expect(r).toMatchObject({ timedOut: true, exitCode: 137 });
    expect(r.stdout).not.toContain('done'); // killed, not waited for
  });

  it('output a background child writes shortly after the exit is still read', async () => {
    const r = await run('sh', ['-c', '(sleep 0.5; echo late) & echo early']);
    expect(r.stdout).toBe('early\nlate\n');
  });

  it('a background child holding the pipes does not hold the call past a short grace', async () => {
    // The child would hold the pipes for a day: only the grace (then killing the group) ends the call.
    const r = await run('sh', ['-c', 'sleep 86400 & echo started']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('started\n');
  });

  it('an abort signal kills the process and rejects with its reason', async () => {
    const ac = new AbortController();
    // Abort once the process runs; it would run for a day, so only the kill ends the call.
    const onSpawn = () => ac.abort(new Error('task cancelled'));
    await expect(run('sh', ['-c', 'sleep 86400'], { signal: ac.signal, onSpawn })).rejects.toThrow('task cancelled');
  });

  it('an IO failure writing the full output is an error (E-SHELL-005)', async () => {
    await writeFile(path.join(workdir, 'logs'), 'not a directory');
    const err = await run('sh', ['-c', 'head -c 20000 /dev/zero']).catch((e: unknown) => e);
    expect((err as MurError).code).toBe('E-SHELL-005');
  });

  it('a missing workdir is an error (E-SHELL-003)', async () => {
    const err = await runShell({ binary: 'echo', args: [], workdir: path.join(workdir, 'nope'), allow: ['echo'], env: hostEnv }).catch((e: unknown) => e);
    expect((err as MurError).code).toBe('E-SHELL-003');
  });
});

describe('shell tool: PATH hygiene', () => {
  it('empty or relative PATH entries are skipped, so a binary planted in the workdir is never found', async () => {
    const { writeFile: wf, chmod } = await import('node:fs/promises');
    await wf(path.join(workdir, 'planted'), '#!/bin/sh\necho pwned\n');
    await chmod(path.join(workdir, 'planted'), 0o755);
    const env = { PATH: `.:${hostEnv.PATH}:` };
    const id = await shellEventIdentity({ binary: 'planted', args: [], workdir, env });
    expect(id).toMatchObject({ binary: 'planted', resolved: false });
    const err = await runShell({ binary: 'planted', args: [], workdir, allow: ['planted'], env }).catch((e: unknown) => e);
    expect((err as MurError).code).toBe('E-SHELL-002');
  });
});
