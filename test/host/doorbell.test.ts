/**
 * The threads of an isolated call poll for each other's messages for a bounded time instead of
 * sleeping at once (runtime/host/doorbell.ts): the rules as tables, the bell across real threads,
 * and the counters of a real component instance called back to back.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SPIN_US, MAX_SPIN_US, componentSpinUs } from '../../runtime/host/thread.ts';
import { RecentTimes, TO_MAIN, TO_WORKER, mainPolls, newDoorbells, pollDoorbell, ring, rings, workerPollUs } from '../../runtime/host/doorbell.ts';
import { ComponentInstance, loadComponent } from '../../runtime/host/index.ts';
import { MurError } from '../../runtime/errors.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { op, probe, quietImports } from './probe.ts';

const open: ComponentInstance[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((i) => i.close()));
});

async function watTool(spinUs: number): Promise<ComponentInstance> {
  const c = await loadComponent(await watFixture('script-wat-tool'));
  const i = new ComponentInstance(c, { grants: { env: {}, networkAllow: [] }, imports: {}, deadlineMs: 20_000, memoryBytes: 64 * 1048576, spinUs });
  open.push(i);
  return i;
}

async function backToBack(i: ComponentInstance, n: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let k = 0; k < n; k++) out.push(await i.call(['run', 'run'], [{ data: `x${k}` }]));
  return out;
}

describe('a doorbell', () => {
  it('reports a ring that came before the poll began, without polling', () => {
    const bells = new Int32Array(newDoorbells());
    const seen = rings(bells, TO_MAIN);
    ring(bells, TO_MAIN);
    let clockReads = 0;
    expect(pollDoorbell(bells, TO_MAIN, seen, 1000, () => ++clockReads)).toBe(true);
    expect(clockReads).toBe(0);
  });

  it('gives up once the budget has passed on its clock, and never polls with a budget of 0', () => {
    const bells = new Int32Array(newDoorbells());
    let t = 0;
    // Each clock read advances 10 µs: a 50 µs budget ends after a handful of reads.
    expect(pollDoorbell(bells, TO_WORKER, rings(bells, TO_WORKER), 50, () => (t += 0.01))).toBe(false);
    expect(t).toBeGreaterThanOrEqual(0.05);
    let reads = 0;
    expect(pollDoorbell(bells, TO_WORKER, 0, 0, () => ++reads)).toBe(false);
    expect(reads).toBe(0);
  });

  it("keeps each direction's count apart", () => {
    const bells = new Int32Array(newDoorbells());
    ring(bells, TO_WORKER);
    ring(bells, TO_WORKER);
    expect([rings(bells, TO_WORKER), rings(bells, TO_MAIN)]).toEqual([2, 0]);
  });

  it('is heard across threads: a poll ends when another thread rings', async () => {
    const buf = newDoorbells();
    const bells = new Int32Array(buf);
    const w = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       parentPort.once('message', () => { Atomics.add(new Int32Array(workerData), 1, 1); });`,
      { eval: true, workerData: buf },
    );
    try {
      await new Promise((r) => w.once('online', r));
      const seen = rings(bells, TO_MAIN);
      w.postMessage('ring');
      // The budget is only an upper bound (10 s): the poll returns when the worker rings.
      expect(pollDoorbell(bells, TO_MAIN, seen, 10_000_000)).toBe(true);
      expect(rings(bells, TO_MAIN)).toBe(seen + 1);
    } finally {
      await w.terminate();
    }
  });
});

describe('recent times', () => {
  it('are the fastest of the last few, none before the first', () => {
    const r = new RecentTimes(3);
    expect(r.fastest()).toBeUndefined();
    r.note(40);
    r.note(5);
    r.note(30);
    expect(r.fastest()).toBe(5);
    // Each new one pushes out the oldest: the 40, then the 5, then the 30.
    r.note(35);
    expect(r.fastest()).toBe(5);
    r.note(31);
    expect(r.fastest()).toBe(30);
    r.note(33);
    expect(r.fastest()).toBe(31);
  });
});

describe('who polls', () => {
  it.each([
    // spinUs, fastest recent guest time, calls in flight, the main thread polls
    [50, 20, 1, true],
    [50, 50, 1, true],
    [50, 51, 1, false],
    [50, undefined, 1, false],
    [50, 20, 2, false],
    [0, 0, 1, false],
  ] as const)('the main thread, budget %d µs, guest %s µs, %d in flight: %s', (spin, guest, inFlight, want) => {
    expect(mainPolls(spin, guest, inFlight)).toBe(want);
  });

  it.each([
    // spinUs, fastest recent gap between an answer and the next call, the worker's poll
    [50, 10, 50],
    [50, 50, 50],
    [50, 51, 0],
    [50, undefined, 0],
    [0, 0, 0],
  ] as const)('the worker, budget %d µs, next call %s µs after an answer: polls %d µs', (spin, gap, want) => {
    expect(workerPollUs(spin, gap)).toBe(want);
  });
});

describe('MURMUR_COMPONENT_SPIN_US', () => {
  it.each([
    [undefined, DEFAULT_SPIN_US],
    ['', DEFAULT_SPIN_US],
    ['0', 0],
    ['200', 200],
    [String(MAX_SPIN_US), MAX_SPIN_US],
  ])('%j is %d µs', (v, want) => {
    expect(componentSpinUs(v === undefined ? {} : { MURMUR_COMPONENT_SPIN_US: v }, 2)).toBe(want);
  });

  it.each([
    // the variable, CPUs the process may run on, µs
    [undefined, 1, 0],
    [undefined, 2, DEFAULT_SPIN_US],
    [undefined, 64, DEFAULT_SPIN_US],
    ['80', 1, 80],
    ['0', 8, 0],
  ] as const)('%j with %d CPU(s) is %d µs: no polling by default where one thread polling holds the only CPU', (v, cpus, want) => {
    expect(componentSpinUs(v === undefined ? {} : { MURMUR_COMPONENT_SPIN_US: v }, cpus)).toBe(want);
  });

  it('defaults to no polling in a process pinned to one CPU (its affinity, as a cpuset gives it)', () => {
    const script = "const { componentSpinUs } = await import('./runtime/host/thread.ts'); console.log(componentSpinUs({}));";
    const one = spawnSync('taskset', ['-c', '0', process.execPath, '--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(one.status, one.stderr).toBe(0);
    expect(one.stdout.trim()).toBe('0');
    const all = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(all.stdout.trim()).toBe(String(availableParallelism() > 1 ? DEFAULT_SPIN_US : 0));
  });

  it.each(['-1', 'fast', '50us', String(MAX_SPIN_US + 1)])('refuses %j, naming the variable and its range (E-RUN-036)', (v) => {
    let e: unknown;
    try {
      componentSpinUs({ MURMUR_COMPONENT_SPIN_US: v }, 2);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(MurError);
    expect((e as MurError).code).toBe('E-RUN-036');
    expect((e as MurError).message).toBe(`MURMUR_COMPONENT_SPIN_US must be a number of microseconds from 0 to ${MAX_SPIN_US}, not ${JSON.stringify(v)}`);
    expect((e as MurError).hint).toContain('0 to let them sleep at once');
  });
});

describe('an isolated instance called back to back', () => {
  it('has its calls read by a polling worker and its answers by a polling main thread, with the same results', async () => {
    const polling = await watTool(MAX_SPIN_US);
    const sleeping = await watTool(0);
    const a = await backToBack(polling, 60);
    const b = await backToBack(sleeping, 60);
    expect(a).toEqual(b);
    expect(a).toHaveLength(60);
    // A budget of 10 ms bounds each poll; on an idle machine nearly every call is caught. What
    // must hold anywhere: the polls happen and catch something.
    expect(polling.callsPolled).toBeGreaterThan(0);
    expect(polling.answersPolled).toBeGreaterThan(0);
  });

  it('with MURMUR_COMPONENT_SPIN_US=0 nothing polls', async () => {
    const i = await watTool(0);
    await backToBack(i, 60);
    expect([i.callsPolled, i.answersPolled]).toEqual([0, 0]);
  });

  it('is not polled for when its calls run longer in the guest than the budget (and the worker does not poll when calls come further apart)', async () => {
    // A JavaScript guest's ping cannot run in 1 µs, and no call follows an answer within 1 µs.
    const i = await probe({}, { spinUs: 1 });
    open.push(i);
    for (let k = 0; k < 30; k++) expect((await op(i, { op: 'ping' })).body.value).toBe('pong');
    expect([i.callsPolled, i.answersPolled]).toEqual([0, 0]);
  });

  it('is not polled for by the main thread while another component call is in flight', async () => {
    let release: (v: string) => void = () => {};
    let asked!: () => void;
    const waiting = new Promise<void>((r) => (asked = r));
    const held = await probe(
      {},
      {
        imports: {
          ...quietImports,
          'murmur:task/task': {
            requestInput: () => {
              asked();
              return new Promise<string>((r) => (release = r));
            },
          },
        },
      },
    );
    open.push(held);
    const busy = await watTool(MAX_SPIN_US);
    await backToBack(busy, 5); // its recent calls are fast: alone, it would be polled for
    const answersBefore = busy.answersPolled;
    const pending = op(held, { op: 'ask', prompt: 'wait' });
    await waiting;
    await backToBack(busy, 40);
    expect(busy.answersPolled).toBe(answersBefore);
    release('done');
    expect((await pending).body.value).toBe('done');
  });

  it('serves a host import the guest calls during a call the main thread polls for', async () => {
    const i = await probe({}, { spinUs: MAX_SPIN_US });
    open.push(i);
    // Fast calls first, so the next one is polled for; then one that asks the host mid-call.
    for (let k = 0; k < 10; k++) await op(i, { op: 'ping' });
    expect((await op(i, { op: 'ask', prompt: 'q' })).body.value).toBe('reply:q');
    expect((await op(i, { op: 'echo', value: 7 })).body.value).toBe(7);
  });
});
