/**
 * How the task machine (runtime/a2a/tasks/tasks.ts) writes a task to a real SQLite store: changes
 * that happen together are one whole-task write of the newest state, and whatever state a task
 * ends in is in the store once its saves have settled.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import { textPart } from '../../runtime/a2a/core/wire.ts';
import { openStore, type DurableStore } from '../../runtime/a2a/store/store.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { tmp } from '../loop/kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: 'ann' } });

function message(text: string): Message {
  return {
    messageId: crypto.randomUUID(),
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    contextId: '',
    taskId: '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  } as Message;
}

/** The real store, with the state of each write it is asked for listed in order. */
async function listedStore(): Promise<{ store: DurableStore; tasks: TaskStore; written: string[] }> {
  const store = await openStore(`sqlite:${join(tmp('task-saves-'), 's.db')}`);
  cleanup.push(() => store.close());
  const written: string[] = [];
  const tasks: TaskStore = {
    save: (t: Task, ctx: ServerCallContext) => {
      written.push(TaskState[t.status!.state]);
      return store.tasks.save(t, ctx);
    },
    load: (id, ctx) => store.tasks.load(id, ctx),
    list: (p, ctx) => store.tasks.list(p, ctx),
  } as TaskStore;
  return { store, tasks, written };
}

function machine(executor: TaskExecutor, store: TaskStore, workingSaveDelayMs?: number): TaskMachine {
  return new TaskMachine({
    executor,
    acceptance: 'queue',
    queueDepth: 4,
    maxLiveTasks: 100,
    store,
    stream: { maxQueued: 16, maxBuffered: 1 << 20, heartbeatMs: 0 },
    ...(workingSaveDelayMs !== undefined ? { workingSaveDelayMs } : {}),
  });
}

/**
 * `tasks` with its first write held until it is stored, and an executor that reports `notes`, then
 * an artifact named after each of `artifacts`, only then (so nothing joins that write), and ends
 * once `go` is called.
 */
function notingAfterFirstWrite(tasks: TaskStore, notes: string[], artifacts: string[]) {
  let firstStored!: () => void;
  const first = new Promise<void>((r) => (firstStored = r));
  let writes = 0;
  const store = {
    ...tasks,
    save: async (t: Task, ctx: ServerCallContext) => {
      await tasks.save(t, ctx);
      if (++writes === 1) firstStored();
    },
  } as TaskStore;
  let go!: () => void;
  const gate = new Promise<void>((r) => (go = r));
  let noted!: () => void;
  const reported = new Promise<void>((r) => (noted = r));
  const executor: TaskExecutor = async (_ctx, ev) => {
    await first;
    for (const n of notes) ev.status(n);
    for (const name of artifacts) ev.artifact({ name, data: { tool: name } });
    noted();
    await gate;
    return { state: 'completed', text: 'ok' };
  };
  return { store, executor, go, reported };
}

/** A running task of `machine` (the working-save delay given) with `notingAfterFirstWrite`'s executor, its reports made. */
async function reportedTask(notes: string[], artifacts: string[], workingSaveDelayMs?: number) {
  const { store, tasks, written } = await listedStore();
  const n = notingAfterFirstWrite(tasks, notes, artifacts);
  const m = machine(n.executor, n.store, workingSaveDelayMs);
  const rec = m.create({ message: message('go'), origin: 'user', trust: 'untrusted', traceparent: undefined, caller });
  m.admit(rec);
  await n.reported;
  return { store, written, m, rec, go: n.go };
}

describe('task saves', () => {
  it('a task created and at once working is written once as working, then once as completed', async () => {
    const { store, tasks, written } = await listedStore();
    const m = machine(async () => ({ state: 'completed', text: 'done' }), tasks);
    const rec = m.create({ message: message('hi'), origin: 'user', trust: 'untrusted', traceparent: undefined, caller });
    m.admit(rec);
    await m.idle();
    await m.flush();
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    const stored = await store.tasks.load(rec.id, caller);
    expect(stored?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(stored?.artifacts?.[0]?.parts?.[0]).toMatchObject({ content: { $case: 'text', value: 'done' } });
  });

  it('with a working-save delay, a running task’s working notes are not written on their own: its end writes them along', async () => {
    const { store, written, m, rec, go } = await reportedTask(['reading', 'writing'], [], 60_000);
    await rec.saving;
    expect(written).toEqual(['TASK_STATE_WORKING']);
    go();
    await m.idle();
    await m.flush();
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect((await store.tasks.load(rec.id, caller))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('without the delay each working note after the first write is written', async () => {
    const { written, m, rec, go } = await reportedTask(['reading'], []);
    await rec.saving;
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_WORKING']);
    go();
    await m.idle();
  });

  it('a delayed working state is written by flush (ListTasks, tasks/get from the store, drain) while the task still runs', async () => {
    const { store, written, m, rec, go } = await reportedTask(['reading'], [], 60_000);
    await m.flush();
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_WORKING']);
    const stored = await store.tasks.load(rec.id, caller);
    expect(stored?.status?.message?.parts?.[0]).toMatchObject({ content: { $case: 'text', value: 'reading' } });
    go();
    await m.idle();
  });

  it('with a working-save delay, a running task’s artifacts are not written each on its own: its end writes them along', async () => {
    const { store, written, m, rec, go } = await reportedTask([], ['tool-call-1', 'tool-call-2'], 60_000);
    await rec.saving;
    expect(written).toEqual(['TASK_STATE_WORKING']);
    go();
    await m.idle();
    await m.flush();
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    const stored = await store.tasks.load(rec.id, caller);
    expect(stored?.artifacts?.map((a) => a.name)).toEqual(['tool-call-1', 'tool-call-2', 'response']);
  });

  it('without the delay (PostgreSQL, which other replicas read) artifacts are written at once, those reported together in one write', async () => {
    const { store, written, m, rec, go } = await reportedTask([], ['tool-call-1', 'tool-call-2']);
    await rec.saving;
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_WORKING']);
    expect((await store.tasks.load(rec.id, caller))?.artifacts?.map((a) => a.name)).toEqual(['tool-call-1', 'tool-call-2']);
    go();
    await m.idle();
  });

  it('a delayed artifact is written by flush (ListTasks, a read from the store, drain) while the task still runs', async () => {
    const { store, written, m, rec, go } = await reportedTask([], ['tool-call-1'], 60_000);
    await m.flush();
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_WORKING']);
    expect((await store.tasks.load(rec.id, caller))?.artifacts?.map((a) => a.name)).toEqual(['tool-call-1']);
    go();
    await m.idle();
  });

  it('changes made while a write is in flight are one later write of the newest state, and the task settles only once it is stored', async () => {
    const { store, tasks, written } = await listedStore();
    // The first write is held until the executor has reported twice and ended.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let first = true;
    const gated: TaskStore = {
      ...tasks,
      save: async (t, ctx) => {
        if (first) {
          first = false;
          await held;
        }
        return tasks.save(t, ctx);
      },
    } as TaskStore;
    const m = machine(async (_ctx, ev) => {
      ev.status('reading');
      ev.status('writing');
      return { state: 'completed', text: 'ok' };
    }, gated);
    const rec = m.create({ message: message('go'), origin: 'user', trust: 'untrusted', traceparent: undefined, caller });
    m.admit(rec);
    await m.idle();
    expect(rec.final).toBe(true);
    let settled = false;
    const saving = rec.saving.then(() => (settled = true));
    expect(settled).toBe(false);
    release();
    await saving;
    expect(written).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect((await store.tasks.load(rec.id, caller))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
