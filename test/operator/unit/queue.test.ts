import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../operator/controller/queue.ts';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

describe('WorkQueue', () => {
  it('merges duplicate adds of a queued key', async () => {
    const q = new WorkQueue();
    const seen: string[] = [];
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.length).toBe(2);
    expect(q.merged).toBe(2);
    const run = q.run(2, async (k) => void seen.push(k));
    await tick();
    q.shutdown();
    await run;
    expect(seen.sort()).toEqual(['a', 'b']);
  });

  it('never runs one key on two workers; an add while running runs it once more afterwards', async () => {
    const q = new WorkQueue();
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const run = q.run(4, async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await tick(20);
      running--;
    });
    q.add('k');
    await tick(5);
    q.add('k');
    q.add('k');
    q.add('k');
    await tick(80);
    q.shutdown();
    await run;
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
  });

  it('backs off exponentially per key and forgets on success', async () => {
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 35 });
    expect(q.addRateLimited('x')).toBe(10);
    expect(q.addRateLimited('x')).toBe(20);
    expect(q.addRateLimited('x')).toBe(35);
    expect(q.addRateLimited('y')).toBe(10);
    q.forget('x');
    expect(q.addRateLimited('x')).toBe(10);
    await tick(30);
    expect(q.length).toBe(2);
    q.shutdown();
  });

  it('shutdown lets in-flight work finish and hands out nothing more', async () => {
    const q = new WorkQueue();
    const done: string[] = [];
    const run = q.run(1, async (k) => {
      await tick(20);
      done.push(k);
    });
    q.add('a');
    q.add('b');
    await tick(5);
    q.shutdown();
    await run;
    expect(done).toEqual(['a']);
  });
});
