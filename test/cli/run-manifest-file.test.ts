/**
 * `mur run` on a capsule whose murmur.yaml is a FIFO or /dev/zero (issue 38 §5): it exits with
 * E-MAN-030 naming the file instead of waiting forever for a writer or reading without end. Run
 * as a separate process (bin/mur), so the test waits for its exit and a hang cannot block vitest.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../registry/helpers.ts';

const started: ChildProcess[] = [];
afterEach(() => {
  // Only a run that never exited is still here: end it, by its own pid.
  for (const p of started.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

/** Runs `bin/mur run <capsule>` and resolves with its exit code and stderr once it exits. */
function murRun(capsule: string): Promise<{ code: number | null; err: string }> {
  const root = tmp('mur-run-file-');
  const proc = spawn(
    process.execPath,
    [join(PROJECT_ROOT, 'bin/mur'), 'run', capsule, '--task', 'hello', '--registry', join(root, 'registry'), '--work-root', join(root, 'sessions')],
    {
      env: { PATH: process.env.PATH, HOME: root, MUR_FROM: 'src' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  started.push(proc);
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, err })));
}

describe('mur run: a murmur.yaml that is not a regular file', () => {
  it('a FIFO: exits 1 with E-MAN-030 naming the file, without waiting for a writer', async () => {
    const capsule = tmp('mur-fifo-capsule-');
    execFileSync('mkfifo', [join(capsule, 'murmur.yaml')]);
    const r = await murRun(capsule);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`capsule manifest ${join(capsule, 'murmur.yaml')} is a FIFO (named pipe), not a regular file [E-MAN-030]`);
  });

  it('a link to /dev/zero: exits 1 with E-MAN-030, reading nothing', async () => {
    const capsule = tmp('mur-zero-capsule-');
    symlinkSync('/dev/zero', join(capsule, 'murmur.yaml'));
    const r = await murRun(capsule);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`capsule manifest ${join(capsule, 'murmur.yaml')} is a character device, not a regular file [E-MAN-030]`);
  });
});
