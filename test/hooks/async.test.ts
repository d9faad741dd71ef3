/**
 * Async hooks (hooks.md "Execution mode", research §4.3): one reused instance per session, calls
 * serialized in dispatch order off the loop's critical path, a bounded queue with a declared
 * overflow rule, drained before the session ends within a budget; faults reach trace and log only.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { harness, scriptHook, INFERENCE_EV, SESSION_CTX, SESSION_END, TASK_END, type Harness } from './harness.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

async function asyncHook(script: Record<string, unknown>, extra: Record<string, unknown> = {}, opts: Record<string, unknown> = {}): Promise<Harness> {
  const h = await harness([await scriptHook('bg', script, { executionMode: 'async', ...extra })], opts);
  open.push(h);
  return h;
}

describe('async dispatch', () => {
  it('does not wait for the hook: every dispatch returns while the hook is still in its first call', async () => {
    // The first call never returns: a bus that waited for it would never get past sessionStart.
    const h = await asyncHook({ 'on-session-start': { record: true, loop: true }, '*': { record: true } });
    await h.bus.sessionStart(SESSION_CTX);
    for (let i = 1; i <= 3; i++) expect(await h.bus.inference({ ...INFERENCE_EV, turn: i })).toEqual([]);
    await h.bus.taskEnd(TASK_END);
    await h.bus.sessionEnd(SESSION_END);
    await h.recorded(1); // the hook reports it is running on-session-start
    await h.bus.drain(0);
    // The drain found the one call still running and the five dispatched after it still queued.
    expect(h.events('hook_dispatch_error')).toEqual([
      expect.objectContaining({ event: 'drain', arm: 'timeout', detail: expect.stringMatching(/instance stopped, 6 event\(s\) abandoned/) }),
    ]);
    expect(h.recs.map((r) => r.rec)).toEqual(['on-session-start']);
  });

  it('calls run later, serialized in dispatch order, on one reused instance', async () => {
    const h = await asyncHook({ '*': { record: true } });
    await h.bus.sessionStart(SESSION_CTX);
    for (let i = 1; i <= 3; i++) expect(await h.bus.inference({ ...INFERENCE_EV, turn: i })).toEqual([]);
    await h.bus.taskEnd(TASK_END);
    await h.bus.sessionEnd(SESSION_END);
    await h.bus.drain();
    expect(h.recs.map((r) => [r.rec, r.n])).toEqual([
      ['on-session-start', 1],
      ['on-inference', 1],
      ['on-inference', 2],
      ['on-inference', 3],
      ['on-task-end', 1],
      ['on-session-end', 1],
    ]);
    // In-memory state persisted across calls: the same instance counted the three turns.
    expect(h.recs.filter((r) => r.rec === 'on-inference').map((r) => (r.ev as { turn: number }).turn)).toEqual([1, 2, 3]);
    expect(h.events()).toEqual([]);
  });

  it('an async hook’s output is never committed, and its faults reach trace and log only', async () => {
    const h = await asyncHook({ 'on-inference': [{ ret: { tag: 'artifact', val: '{"x":1}' } }, { err: 'async trouble' }, { trap: true }] });
    for (let i = 0; i < 3; i++) expect(await h.bus.inference(INFERENCE_EV)).toEqual([]);
    await h.bus.drain();
    expect(h.events('hook_dispatch_error').map((e) => [e.hook_name, e.event, e.arm])).toEqual([
      ['bg', 'on-inference', 'artifact'],
      ['bg', 'on-inference', 'error'],
      ['bg', 'on-inference', 'trap'],
    ]);
    expect(h.log('bg')).toMatch(/returned arm 'artifact' from an async hook, whose output is always discarded/);
    expect(h.log('bg')).toMatch(/on-inference returned err: async trouble/);
  });

  it('blocking hooks still answer in manifest order next to an async one', async () => {
    const bg = await scriptHook('bg', { '*': { record: true, sleepMs: 100 } }, { executionMode: 'async' });
    const fg = await scriptHook('fg', { 'on-inference': { ret: { tag: 'artifact', val: '{"fg":true}' } } });
    const h = await harness([bg, fg]);
    open.push(h);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual(['{"fg":true}']);
    await h.bus.drain();
    expect(h.recs.map((r) => r.rec)).toEqual(['on-inference']);
  });
});

describe('queue overflow', () => {
  it('drop (the default): the event is discarded, counted, traced as queue-overflow, summarized in the log', async () => {
    const h = await asyncHook({ '*': { record: true, sleepMs: 300 } }, {}, { queueDepth: 2 });
    for (let i = 1; i <= 6; i++) await h.bus.inference({ ...INFERENCE_EV, turn: i });
    // One running, two queued, three dropped.
    const drops = h.events('hook_dispatch_error');
    expect(drops.map((e) => [e.event, e.arm])).toEqual([
      ['on-inference', 'queue-overflow'],
      ['on-inference', 'queue-overflow'],
      ['on-inference', 'queue-overflow'],
    ]);
    await h.bus.drain();
    expect(h.recs.map((r) => (r.ev as { turn: number }).turn)).toEqual([1, 2, 3]);
    expect(h.log('bg')).toMatch(/queue overflow: 3 event\(s\) dropped this session \(on_overflow: drop\)/);
  });

  it('block: the dispatch waits for room, nothing is lost, order is kept', async () => {
    const h = await asyncHook({ '*': { record: true } }, { onOverflow: 'block' }, { queueDepth: 1 });
    await h.bus.inference({ ...INFERENCE_EV, turn: 1 }); // runs
    await h.bus.inference({ ...INFERENCE_EV, turn: 2 }); // the one free slot
    let third = false;
    const waiting = h.bus.inference({ ...INFERENCE_EV, turn: 3 }).then(() => (third = true));
    // The hook's reply to turn 1 is a worker message, which cannot arrive before this task yields:
    // turn 1 is still running here, so there is no room and the third dispatch must be waiting.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(third).toBe(false);
    await waiting;
    await h.bus.inference({ ...INFERENCE_EV, turn: 4 });
    await h.bus.drain();
    expect(h.recs.map((r) => (r.ev as { turn: number }).turn)).toEqual([1, 2, 3, 4]);
    expect(h.events('hook_dispatch_error')).toEqual([]);
  });
});

describe('drain', () => {
  it('finishes queued work before the session ends', async () => {
    const h = await asyncHook({ '*': { record: true, sleepMs: 100 } });
    for (let i = 1; i <= 5; i++) await h.bus.inference({ ...INFERENCE_EV, turn: i });
    expect(h.recs.length).toBeLessThan(5);
    await h.bus.drain(10_000);
    expect(h.recs).toHaveLength(5);
  });

  it('an overrun of the drain budget aborts the hook: fault arm timeout, event drain', async () => {
    const h = await asyncHook({ 'on-session-end': { loop: true }, 'on-inference': { record: true } }, { deadlineMs: 8000 });
    await h.bus.sessionEnd(SESSION_END);
    await h.bus.inference(INFERENCE_EV);
    await h.bus.drain(500);
    const ev = h.events('hook_dispatch_error');
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({ hook_name: 'bg', event: 'drain', arm: 'timeout' });
    expect(h.log('bg')).toMatch(/drain: the queue did not empty within the 500 ms drain budget; instance stopped, 2 event\(s\) abandoned/);
    // The abandoned event never ran, and nothing more is dispatched to the aborted hook.
    await h.bus.inference(INFERENCE_EV);
    expect(h.recs).toEqual([]);
  });
});
