/**
 * A shared component thread (runtime/host/thread.ts): several instances in one worker, each with
 * its own slot — grants, memory, state — calls one at a time, deadlines counted from each call's
 * own start; a trap drops one slot, a deadline stops the thread.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  ComponentInstance,
  ComponentThread,
  DeadlineExceeded,
  GuestTrap,
  HostFault,
  componentIdleMs,
  componentThreads,
  drainWorkerPool,
  loadComponent,
} from '../../runtime/host/index.ts';
import { componentIdleKeepBytes, type IdleOutcome, type ThreadOptions } from '../../runtime/host/thread.ts';
import { POOL } from '../../runtime/host/workers.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { MurError } from '../../runtime/errors.ts';
import { op, probe, quietImports } from './probe.ts';

const open: ComponentInstance[] = [];
const threads: ComponentThread[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((i) => i.close()));
  await Promise.all(threads.splice(0).map((t) => t.close()));
});

function thread(opts: ThreadOptions = { idleMs: 0 }): ComponentThread {
  const t = new ComponentThread(opts);
  threads.push(t);
  return t;
}

async function member(t: ComponentThread | undefined, env: Record<string, string>, opts: Parameters<typeof probe>[1] = {}): Promise<ComponentInstance> {
  const i = await probe({ env }, { ...opts, ...(t ? { thread: t } : {}) });
  open.push(i);
  return i;
}

/**
 * A member whose `ask` call waits on the host until the test releases it; `asked` resolves once the
 * guest has made the host call.
 */
async function heldMember(t: ComponentThread): Promise<{ inst: ComponentInstance; asked: Promise<void>; release: (v: string) => void }> {
  let release: (v: string) => void = () => {};
  let onAsk!: () => void;
  const asked = new Promise<void>((r) => (onAsk = r));
  const requestInput = (): Promise<string> => {
    onAsk();
    return new Promise<string>((r) => (release = r));
  };
  const inst = await member(t, {}, { imports: { ...quietImports, 'murmur:task/task': { requestInput } } });
  return { inst, asked, release: (v) => release(v) };
}

describe('a shared component thread', () => {
  it('runs its instances in one worker, each with its own grants and its own state', async () => {
    const t = thread();
    const a = await member(t, { WHO: 'a' });
    const b = await member(t, { WHO: 'b' });
    const alone = await member(undefined, { WHO: 'alone' });
    expect((await op(a, { op: 'env', name: 'WHO' })).body.value).toBe('a');
    expect((await op(b, { op: 'env', name: 'WHO' })).body.value).toBe('b');
    expect((await op(alone, { op: 'env', name: 'WHO' })).body.value).toBe('alone');
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect((await op(a, { op: 'count' })).body.value).toBe(2);
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    expect(a.threadId).toBeDefined();
    expect(b.threadId).toBe(a.threadId);
    expect(alone.threadId).not.toBe(a.threadId);
    expect(t.starts).toBe(1);
  });

  it("drops only a trapped instance's slot: the others keep their state, and the thread goes on", async () => {
    const t = thread();
    const a = await member(t, {});
    const b = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    await expect(op(b, { op: 'trap' })).rejects.toBeInstanceOf(GuestTrap);
    expect((await op(a, { op: 'count' })).body.value).toBe(2);
    // The trapped one starts afresh, in the same thread.
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    expect(b.starts).toBe(2);
    expect(b.threadId).toBe(a.threadId);
    expect(t.starts).toBe(1);
  });

  it('stops the thread at a deadline: every instance in it starts afresh on its next call', async () => {
    const t = thread();
    const a = await member(t, {});
    const b = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    const before = a.threadId;
    const err = await op(b, { op: 'spin' }, 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineExceeded);
    // a lost its count with the thread; both run again, together, in a new one.
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    expect(t.starts).toBe(2);
    expect(a.threadId).not.toBe(before);
    expect(b.threadId).toBe(a.threadId);
  });

  it("counts a call's deadline from its own start, not from when it was queued behind another instance's call", async () => {
    const t = thread();
    // a's call waits in the thread on a host call the test answers only once b's call has been
    // queued for longer than b's own deadline.
    const { inst: a, asked, release } = await heldMember(t);
    const b = await member(t, {}, { deadlineMs: 1000 });
    await b.start();
    const first = op(a, { op: 'ask', prompt: 'hold' });
    await asked;
    const second = op(b, { op: 'count' });
    await new Promise((r) => setTimeout(r, 1500)); // b's whole deadline passes while it waits its turn
    release('answered');
    expect((await first).body.value).toBe('answered');
    expect((await second).body.value).toBe(1);
  });

  it('closing an instance whose call is running stops that call; the thread restarts for the others', async () => {
    const t = thread();
    const { inst: a, asked } = await heldMember(t); // never answered
    const b = await member(t, {});
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    const running = op(a, { op: 'ask' }).catch((e: unknown) => e);
    await asked;
    await a.close();
    const err = await running;
    expect(err).toBeInstanceOf(HostFault);
    expect((err as HostFault).message).toMatch(/was stopped: the instance closed/);
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    expect(t.starts).toBe(2);
  });

  it('a closed thread stops its worker and takes no more instances', async () => {
    const t = thread();
    const a = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect(t.running).toBe(true);
    await t.close();
    expect(t.running).toBe(false);
    await expect(op(a, { op: 'count' })).rejects.toThrow(/component thread is closed/);
  });
});

describe('an idle component thread', () => {
  /** A thread that lets its worker go after `idleMs`, and a promise of its next idle stop. */
  function idleThread(idleMs: number, keepBytes?: number): { t: ComponentThread; stopped: () => Promise<IdleOutcome> } {
    const t = thread({ idleMs, ...(keepBytes !== undefined ? { keepBytes } : {}) });
    return { t, stopped: () => t.nextIdle() };
  }

  /** The hand-written WAT tool (one 64 KiB page of linear memory, no JS engine) in the thread. */
  async function watMember(t: ComponentThread): Promise<ComponentInstance> {
    const c = await loadComponent(await watFixture('script-wat-tool'));
    const i = new ComponentInstance(c, { grants: { env: {}, networkAllow: [] }, imports: {}, deadlineMs: 20_000, memoryBytes: 64 * 1048576, thread: t });
    open.push(i);
    return i;
  }

  it('keeps its worker and a small instance through the idle time, collecting its garbage; a JS-engine instance goes and starts afresh in that worker', async () => {
    const { t, stopped } = idleThread(300);
    const idle = stopped();
    const a = await member(t, {});
    const w = await watMember(t);
    expect(await w.call(['run', 'run'], [{ data: 'abc' }])).toMatchObject({ data: 'ABC' });
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    const worker = w.threadId;
    expect(await idle).toMatchObject({ stopped: false, dropped: 1, heapUsed: expect.any(Number) });
    expect([t.running, t.idleStops, t.idleCollects]).toEqual([true, 0, 1]);
    expect(await w.call(['run', 'run'], [{ data: 'def' }])).toMatchObject({ data: 'DEF' });
    expect([w.threadId, w.starts]).toEqual([worker, 1]);
    // The probe (≈ 9 MiB of linear memory) was dropped: its count begins again, in the same worker.
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect([a.threadId, a.starts, t.starts]).toEqual([worker, 2, 1]);
  });

  it('with a keep size of 0 (MURMUR_COMPONENT_IDLE_KEEP_MIB=0) lets even a small instance, and so the worker, go', async () => {
    const { t, stopped } = idleThread(300, 0);
    const idle = stopped();
    const w = await watMember(t);
    expect(await w.call(['run', 'run'], [{ data: 'abc' }])).toMatchObject({ data: 'ABC' });
    expect(await idle).toEqual({ stopped: true });
    expect([t.running, t.idleStops]).toEqual([false, 1]);
    expect(await w.call(['run', 'run'], [{ data: 'def' }])).toMatchObject({ data: 'DEF' });
    expect([w.starts, t.starts]).toEqual([2, 2]);
  });

  it('lets a worker that only instantiated (a pre-warm nobody called) go at idle, small instances too; the first call starts a fresh one', async () => {
    const { t, stopped } = idleThread(300);
    const idle = stopped();
    const w = await watMember(t);
    await w.start();
    expect([t.running, w.starts]).toEqual([true, 1]);
    expect(await idle).toEqual({ stopped: true });
    expect([t.running, t.idleStops, t.idleCollects]).toEqual([false, 1, 0]);
    // Once it has served a call, the same small instance is kept through the next idle period.
    const kept = stopped();
    expect(await w.call(['run', 'run'], [{ data: 'abc' }])).toMatchObject({ data: 'ABC' });
    expect([w.starts, t.starts]).toEqual([2, 2]);
    expect(await kept).toMatchObject({ stopped: false, dropped: 0 });
    expect([t.running, t.idleStops, t.idleCollects]).toEqual([true, 1, 1]);
  });

  it('takes its worker from the pool without booting a replacement for it to wait beside', async () => {
    await drainWorkerPool();
    const t = thread({ idleMs: 0 });
    const w = await watMember(t);
    await w.start();
    expect(POOL.replenishScheduled).toBe(false);
    expect(POOL.idleCount()).toBe(0);
  });

  it('lets its worker go after the idle time without a call when every instance in it is large; the next call starts a fresh instance in a new worker', async () => {
    const { t, stopped } = idleThread(300);
    const a = await member(t, {});
    const b = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    const stop = stopped();
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    const before = a.threadId;
    expect(await stop).toEqual({ stopped: true });
    expect(t.running).toBe(false);
    expect(t.idleStops).toBe(1);
    // Both start afresh (their counts begin again), together, in one new worker.
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect((await op(b, { op: 'count' })).body.value).toBe(1);
    expect(t.starts).toBe(2);
    expect(a.threadId).not.toBe(before);
    expect(b.threadId).toBe(a.threadId);
  });

  it('is not idle while a call waits on the host (a request-input): the stop is scheduled only once it returns', async () => {
    const { t, stopped } = idleThread(20);
    const { inst: a, asked, release } = await heldMember(t);
    const waiting = op(a, { op: 'ask', prompt: 'hold' });
    await asked;
    expect(t.idleStopPending).toBe(false);
    expect(t.running).toBe(true);
    const stop = stopped();
    release('answered');
    expect((await waiting).body.value).toBe('answered');
    expect(await stop).toEqual({ stopped: true });
    expect(t.running).toBe(false);
    expect(t.starts).toBe(1);
  });

  it('calls closer together than the idle time keep the instance and its state; the stop is scheduled again after each', async () => {
    const { t } = idleThread(60_000);
    const a = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect(t.idleStopPending).toBe(true);
    expect((await op(a, { op: 'count' })).body.value).toBe(2);
    expect(t.idleStopPending).toBe(true);
    expect(t.idleStops).toBe(0);
    expect(t.starts).toBe(1);
  });

  it('with 0 keeps its worker: no stop is ever scheduled', async () => {
    const t = thread({ idleMs: 0 });
    const a = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect(t.idleStopPending).toBe(false);
    expect(t.running).toBe(true);
  });

  it('a closed thread schedules no stop', async () => {
    const { t } = idleThread(60_000);
    const a = await member(t, {});
    expect((await op(a, { op: 'count' })).body.value).toBe(1);
    expect(t.idleStopPending).toBe(true);
    await t.close();
    expect(t.idleStopPending).toBe(false);
  });
});

describe('MURMUR_COMPONENT_IDLE_MS', () => {
  it.each([
    [undefined, 30_000],
    ['', 30_000],
    ['0', 0],
    ['1500', 1500],
  ])('%j is %d ms', (v, want) => {
    expect(componentIdleMs(v === undefined ? {} : { MURMUR_COMPONENT_IDLE_MS: v })).toBe(want);
  });

  it.each(['-1', 'soon', '10s'])('refuses %j, naming the variable and the default (E-RUN-034)', (v) => {
    let e: unknown;
    try {
      componentIdleMs({ MURMUR_COMPONENT_IDLE_MS: v });
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(MurError);
    expect((e as MurError).code).toBe('E-RUN-034');
    expect((e as MurError).message).toContain(`MURMUR_COMPONENT_IDLE_MS must be a number of milliseconds ≥ 0, not ${JSON.stringify(v)}`);
  });
});

describe('MURMUR_COMPONENT_IDLE_KEEP_MIB', () => {
  it.each([
    [undefined, 4 * 1048576],
    ['', 4 * 1048576],
    ['0', 0],
    ['0.5', 524288],
    ['16', 16 * 1048576],
  ])('%j is %d bytes', (v, want) => {
    expect(componentIdleKeepBytes(v === undefined ? {} : { MURMUR_COMPONENT_IDLE_KEEP_MIB: v })).toBe(want);
  });

  it.each(['-1', 'lots', '4MiB'])('refuses %j, naming the variable and the unit (E-RUN-075)', (v) => {
    let e: unknown;
    try {
      componentIdleKeepBytes({ MURMUR_COMPONENT_IDLE_KEEP_MIB: v });
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(MurError);
    expect((e as MurError).code).toBe('E-RUN-075');
    expect((e as MurError).message).toContain(`MURMUR_COMPONENT_IDLE_KEEP_MIB must be a number of MiB ≥ 0, not ${JSON.stringify(v)}`);
  });
});

describe('MURMUR_COMPONENT_THREADS', () => {
  it.each([
    [undefined, 'session'],
    ['', 'session'],
    ['session', 'session'],
    ['instance', 'instance'],
  ])('%j is %s', (v, want) => {
    expect(componentThreads(v === undefined ? {} : { MURMUR_COMPONENT_THREADS: v })).toBe(want);
  });

  it('refuses anything else, naming the variable and the choices (E-RUN-033)', () => {
    const e = (() => {
      try {
        componentThreads({ MURMUR_COMPONENT_THREADS: 'shared' });
      } catch (x) {
        return x;
      }
    })() as MurError;
    expect(e).toBeInstanceOf(MurError);
    expect(e.code).toBe('E-RUN-033');
    expect(e.message).toMatch(/MURMUR_COMPONENT_THREADS must be session or instance, not "shared"/);
  });
});
