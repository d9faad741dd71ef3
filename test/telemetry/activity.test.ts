/**
 * The activity tracker behind `capsule_idle_seconds` (runtime/telemetry/activity.ts): pure counting
 * on an injected clock, so idle time is read at chosen instants instead of waited for.
 */
import { describe, expect, it } from 'vitest';
import { ActivityTracker } from '../../runtime/telemetry/activity.ts';
import { RuntimeMetrics } from '../../runtime/telemetry/metrics.ts';
import { parseExposition } from './prom-text.ts';

function fakeClock(startMs: number) {
  let t = startMs;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('activity tracker', () => {
  it('idle time grows from the start while nothing happens', () => {
    const clock = fakeClock(1_700_000_000_000);
    const a = new ActivityTracker(clock.now);
    expect(a.idleSeconds()).toBe(0);
    expect(a.idleSinceSeconds()).toBe(1_700_000_000);
    clock.advance(2500);
    expect(a.idleSeconds()).toBe(2.5);
    clock.advance(500);
    expect(a.idleSeconds()).toBe(3);
    expect(a.idleSinceSeconds()).toBe(1_700_000_000);
  });

  it('is busy (0, since 0) while any piece of work is open; the idle period starts when the last one ends', () => {
    const clock = fakeClock(1_700_000_000_000);
    const a = new ActivityTracker(clock.now);
    clock.advance(10_000);
    const endTask = a.begin();
    const endRequest = a.begin();
    clock.advance(60_000);
    expect(a.idleSeconds()).toBe(0);
    expect(a.idleSinceSeconds()).toBe(0);
    endTask();
    clock.advance(1000);
    expect(a.idleSeconds()).toBe(0); // the request is still open
    endRequest();
    expect(a.idleSinceSeconds()).toBe(1_700_000_071);
    clock.advance(4000);
    expect(a.idleSeconds()).toBe(4);
  });

  it('an end called twice counts once', () => {
    const clock = fakeClock(0);
    const a = new ActivityTracker(clock.now);
    const one = a.begin();
    const two = a.begin();
    one();
    one();
    expect(a.open).toBe(1);
    expect(a.idleSeconds()).toBe(0);
    two();
    expect(a.open).toBe(0);
  });

  it('capsule_idle_seconds and capsule_idle_since_timestamp_seconds are read from the tracker at scrape time', async () => {
    const clock = fakeClock(1_700_000_000_000);
    const a = new ActivityTracker(clock.now);
    const m = new RuntimeMetrics();
    m.watchIdle('sleeper', a);
    clock.advance(7000);
    let x = parseExposition(await m.registry.metrics());
    expect(x.get('capsule_idle_seconds', { capsule: 'sleeper' })).toBe(7);
    expect(x.get('capsule_idle_since_timestamp_seconds', { capsule: 'sleeper' })).toBe(1_700_000_000);
    expect(x.types.get('capsule_idle_seconds')).toBe('gauge');
    const end = a.begin();
    x = parseExposition(await m.registry.metrics());
    expect(x.get('capsule_idle_seconds', { capsule: 'sleeper' })).toBe(0);
    expect(x.get('capsule_idle_since_timestamp_seconds', { capsule: 'sleeper' })).toBe(0);
    end();
    clock.advance(1500);
    x = parseExposition(await m.registry.metrics());
    expect(x.get('capsule_idle_seconds', { capsule: 'sleeper' })).toBe(1.5);
    expect(x.get('capsule_idle_since_timestamp_seconds', { capsule: 'sleeper' })).toBe(1_700_000_007);
  });
});
