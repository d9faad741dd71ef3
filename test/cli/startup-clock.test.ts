import { describe, expect, it } from 'vitest';
import { StartupClock } from '../../runtime/cli/startup-clock.ts';

describe('mur serve start-up line', () => {
  it('names each phase in order with its wall and CPU time, and totals since the process started', () => {
    const clock = new StartupClock();
    let x = 0;
    for (let i = 0; i < 1e6; i++) x += i; // some CPU in the phase
    clock.mark('stage');
    clock.mark('store');
    const line = clock.line();
    expect(x).toBeGreaterThan(0);
    const m =
      /^start-up: boot (\d+) ms \(CPU (\d+)\), stage (\d+) ms \(CPU (\d+)\), store (\d+) ms \(CPU (\d+)\); serving (\d+) ms after the process started, CPU (\d+) ms$/.exec(
        line,
      );
    expect(m, line).not.toBeNull();
    const [boot, , stage, , store, , total] = m!.slice(1).map(Number);
    // The phases add up to the total (each rounded: within a millisecond per phase).
    expect(Math.abs(boot! + stage! + store! - total!)).toBeLessThanOrEqual(3);
  });
});
