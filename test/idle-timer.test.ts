/**
 * The one countdown to idle (runtime/idle-timer.ts) its three users run on: fires once after the
 * time without a touch, a touch restarts it in place, cancel stops it, 0 ms never fires, and it
 * never keeps a process alive.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { IdleTimer } from '../runtime/idle-timer.ts';

describe('an idle timer', () => {
  it('fires once after the time without a touch, and is not running after', async () => {
    let fired = 0;
    let done!: () => void;
    const t = new IdleTimer(5, () => {
      fired++;
      done();
    });
    const idle = new Promise<void>((r) => (done = r));
    t.touch();
    expect(t.running).toBe(true);
    await idle;
    expect(fired).toBe(1);
    expect(t.running).toBe(false);
  });

  it('a touch while it runs restarts the same countdown; cancel stops it for good', async () => {
    let fired = 0;
    const t = new IdleTimer(60_000, () => fired++);
    t.touch();
    t.touch();
    expect(t.running).toBe(true);
    t.cancel();
    expect(t.running).toBe(false);
    t.cancel(); // twice is harmless
    expect(fired).toBe(0);
  });

  it('with 0 ms never runs', () => {
    const t = new IdleTimer(0, () => {
      throw new Error('fired');
    });
    t.touch();
    expect(t.running).toBe(false);
  });

  it('does not keep a process alive: a process with a running countdown of an hour exits at once', () => {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "const { IdleTimer } = await import('./runtime/idle-timer.ts'); new IdleTimer(3_600_000, () => console.log('fired')).touch(); console.log('armed');",
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('armed');
  });
});
