/**
 * The README's first command, `npm run demo`: examples/hello runs end to end offline (its
 * components built from source, a local registry, the scripted provider, `mur run`). Run as the
 * README runs it, in its own process, so the command stays true.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

describe('npm run demo', () => {
  it('runs the hello capsule end to end and says it completed', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts', 'demo.ts')], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      timeout: 240_000,
    });
    const out = `${r.stdout}\n${r.stderr}`;
    expect(r.status, out).toBe(0);
    expect(out).toContain('→ tool greet');
    expect(out).toMatch(/■ task ok after \d+ turn\(s\)/);
    expect(out).toContain('[demo] done: the capsule completed its task.');
  });
});
