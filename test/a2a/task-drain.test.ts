/**
 * The task machine's graceful drain (runtime/a2a/tasks/tasks.ts) when its budget runs out: the unfinished
 * task is failed with a reason AND its executor is aborted, so the work (a driver call, a tool)
 * stops instead of running on behind a task its caller was told has failed.
 */
import { describe, expect, it } from 'vitest';
import { Role, TaskState, type Message } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext } from '@a2a-js/sdk/server';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import { textPart } from '../../runtime/a2a/core/wire.ts';

const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: 'alice' } });

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
  };
}

describe('drain budget', () => {
  it('when the drain budget runs out, the unfinished task is failed and its executor is aborted', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let abortedWith: unknown;
    // Runs until aborted: it never finishes on its own within any budget.
    const executor: TaskExecutor = (ctx) =>
      new Promise((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          abortedWith = ctx.signal.reason;
          resolve({ state: 'completed', text: 'too late' });
        });
        started();
      });
    const m = new TaskMachine({
      executor,
      acceptance: 'queue',
      queueDepth: 4,
      maxLiveTasks: 100,
      store: new InMemoryTaskStore(),
      stream: { maxQueued: 16, maxBuffered: 1 << 20, heartbeatMs: 0 },
      onEvent: () => {},
    });
    const rec = m.create({ message: message('work'), origin: 'user', trust: 'untrusted', traceparent: undefined, caller });
    m.admit(rec);
    await running;
    expect(await m.drain(0)).toBe(1);
    expect(rec.state).toBe('failed');
    expect(JSON.stringify(rec.statusMessage)).toMatch(/drain budget ran out/);
    expect(m.snapshot(rec).status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(abortedWith).toBeDefined();
  });
});
