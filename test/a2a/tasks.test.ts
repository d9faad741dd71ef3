/**
 * The task state machine on its own (runtime/a2a/tasks/tasks.ts): no HTTP, no transport. Acceptance,
 * request-input, cancel, exactly one final status, and the TaskStore seam with owner scoping.
 */
import { describe, expect, it } from 'vitest';
import { Role, TaskState, type Message, type StreamResponse } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import type { TaskAcceptance } from '../../runtime/a2a/tasks/task-options.ts';
import type { TaskRecord } from '../../runtime/a2a/tasks/task-record.ts';
import { textPart } from '../../runtime/a2a/core/wire.ts';

const user = (name: string) => new ServerCallContext({ user: { isAuthenticated: true, userName: name } });
const alice = user('alice');
const bob = user('bob');

function message(text: string, extra: Partial<Message> = {}): Message {
  return {
    messageId: crypto.randomUUID(),
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    contextId: '',
    taskId: '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

function machine(executor: TaskExecutor, acceptance: TaskAcceptance = 'queue', o: { queueDepth?: number; store?: TaskStore } = {}) {
  const events: Array<{ id: string; resp: StreamResponse }> = [];
  const m = new TaskMachine({
    executor,
    acceptance,
    queueDepth: o.queueDepth ?? 4,
    maxLiveTasks: 100,
    store: o.store ?? new InMemoryTaskStore(),
    stream: { maxQueued: 16, maxBuffered: 1 << 20, heartbeatMs: 0 },
    onEvent: (rec, resp) => events.push({ id: rec.id, resp }),
  });
  const start = (text: string, caller = alice): TaskRecord => {
    const rec = m.create({ message: message(text), origin: 'user', trust: 'untrusted', traceparent: undefined, caller });
    m.admit(rec);
    return rec;
  };
  const finals = (id: string) =>
    events.filter(
      (e) =>
        e.id === id &&
        e.resp.payload?.$case === 'statusUpdate' &&
        [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED].includes(
          e.resp.payload.value.status!.state,
        ),
    );
  return { m, start, events, finals };
}

/** An executor whose tasks wait until released. */
function gated() {
  const release = new Map<string, () => void>();
  const exec: TaskExecutor = (ctx) =>
    new Promise((resolve) => {
      release.set(ctx.taskId, () => resolve({ state: 'completed', text: `done ${ctx.text}` }));
      ctx.signal.addEventListener('abort', () => resolve({ state: 'completed', text: 'ignored' }));
    });
  return { exec, release };
}

describe('task machine', () => {
  it('queue: one runs, queueDepth wait submitted, the next is rejected with queue full', async () => {
    const g = gated();
    const { m, start } = machine(g.exec, 'queue', { queueDepth: 1 });
    const a = start('a');
    const b = start('b');
    const c = start('c');
    expect([a.state, b.state, c.state]).toEqual(['working', 'submitted', 'rejected']);
    expect(c.statusMessage?.parts[0]?.content).toMatchObject({ value: expect.stringMatching(/queue full/) });
    g.release.get(a.id)!();
    await m.waitFor(b, () => b.state === 'working');
    g.release.get(b.id)!();
    await m.idle();
    expect([a.state, b.state]).toEqual(['completed', 'completed']);
  });

  it('a rejected task keeps no body: neither the machine nor the store holds its message', async () => {
    const g = gated();
    const store = new InMemoryTaskStore();
    const { m, start } = machine(g.exec, 'queue', { queueDepth: 0, store });
    const a = start('a');
    const big = 'x'.repeat(1024 * 1024);
    const c = start(big);
    expect([a.state, c.state]).toEqual(['working', 'rejected']);
    expect(c.text).toBe('');
    expect(c.history).toEqual([]);
    await m.flush();
    const stored = await store.load(c.id, alice);
    expect(JSON.stringify(stored).length).toBeLessThan(4096);
    expect(stored?.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    g.release.get(a.id)?.();
  });

  it('single: the second task is rejected and done resolves after the first', async () => {
    const g = gated();
    const { m, start } = machine(g.exec, 'single');
    const a = start('a');
    expect(start('b').state).toBe('rejected');
    expect(m.acceptsMore()).toBe(false);
    g.release.get(a.id)!();
    await m.done;
    expect(a.state).toBe('completed');
  });

  it('none: creating a task is refused', () => {
    const { m } = machine(async () => ({ state: 'completed' }), 'none');
    expect(() => m.create({ message: message('x'), origin: 'user', trust: 'untrusted', traceparent: undefined, caller: alice })).toThrow(
      /task_acceptance: none/,
    );
  });

  it('request-input: the reply is delivered to the waiting executor and the task goes on', async () => {
    const { m, start } = machine(async (_ctx, ev) => ({ state: 'completed', text: `got ${await ev.requestInput('name?')}` }));
    const rec = start('hi');
    await m.waitFor(rec, () => rec.state === 'input-required');
    m.replyTo(rec, message('bob', { taskId: rec.id }))();
    await m.waitFor(rec, () => rec.final);
    expect(rec.state).toBe('completed');
    expect(rec.responseText).toBe('got bob');
    expect(() => m.replyTo(rec, message('again'))).toThrow(/never restarted/);
  });

  it('cancel: exactly one final status, even when the executor later returns', async () => {
    const g = gated();
    const { m, start, finals } = machine(g.exec);
    const rec = start('x');
    m.cancel(rec);
    await m.idle();
    expect(rec.state).toBe('canceled');
    expect(finals(rec.id)).toHaveLength(1);
    expect(() => m.cancel(rec)).toThrow(/cannot be canceled/);
  });

  it('every change reaches the injected TaskStore under its creator; another caller cannot see it', async () => {
    const store = new InMemoryTaskStore();
    const { m, start } = machine(async (ctx) => ({ state: 'completed', text: ctx.text.toUpperCase() }), 'queue', { store });
    const rec = start('abc', alice);
    await m.idle();
    await m.flush();
    const saved = await store.load(rec.id, alice);
    expect(saved?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(saved?.artifacts[0]?.parts[0]?.content).toMatchObject({ $case: 'text', value: 'ABC' });
    expect(await store.load(rec.id, bob)).toBeUndefined();
    expect(m.find(rec.id, alice)).toBe(rec);
    expect(m.find(rec.id, bob)).toBeUndefined();
    expect(await m.load(rec.id, bob)).toBeUndefined();
  });

  it('a failing store does not stop the task, and says so', async () => {
    const errors: string[] = [];
    const broken: TaskStore = {
      save: async () => {
        throw new Error('disk gone');
      },
      load: async () => undefined,
      list: async () => ({ tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 }),
    };
    const m = new TaskMachine({
      executor: async () => ({ state: 'completed', text: 'ok' }),
      acceptance: 'queue',
      queueDepth: 1,
      maxLiveTasks: 10,
      store: broken,
      stream: { maxQueued: 4, maxBuffered: 1024, heartbeatMs: 0 },
      onStoreError: (id, e) => errors.push(`${id}: ${(e as Error).message}`),
    });
    const rec = m.create({ message: message('x'), origin: 'user', trust: 'untrusted', traceparent: undefined, caller: alice });
    m.admit(rec);
    await m.idle();
    await m.flush();
    expect(rec.state).toBe('completed');
    expect(errors[0]).toBe(`${rec.id}: disk gone`);
  });
});
