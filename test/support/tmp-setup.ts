/**
 * vitest globalSetup: every temp dir a test makes (registries, capsules, session workdirs — each
 * holding copies of 12 MB components) goes under one folder for this run, removed at the end, so
 * a run leaves nothing behind in the machine's temp dir. Workers inherit TMPDIR from this process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'capsule-tests-'));
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(dir, { recursive: true, force: true });
  };
}
