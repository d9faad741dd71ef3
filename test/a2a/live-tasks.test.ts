/**
 * Which finished tasks stay in memory (runtime/a2a/tasks/live-tasks.ts): the rule as a table, the sizes
 * it counts, and the task machine keeping to it while the store answers for what left memory.
 */
import { describe, expect, it } from 'vitest';
import { Role, TaskState, type Message } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext } from '@a2a-js/sdk/server';
import { evictions, finishedTotals, partBytes, retainedBytes, type LiveEntry } from '../../runtime/a2a/tasks/live-tasks.ts';
import { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import { artifact, dataPart, textPart } from '../../runtime/a2a/core/wire.ts';

const fin = (id: string, bytes: number, subscribers = 0): LiveEntry => ({ id, final: true, subscribers, bytes });
const run = (id: string): LiveEntry => ({ id, final: false, subscribers: 0, bytes: 0 });

describe('finished tasks kept in memory', () => {
  it.each([
    { why: 'within both bounds: nothing leaves', live: [fin('a', 10), fin('b', 10)], maxTasks: 2, maxBytes: 20, out: [] },
    { why: 'over the count: the oldest finished leave first', live: [fin('a', 1), fin('b', 1), fin('c', 1)], maxTasks: 1, maxBytes: 100, out: ['a', 'b'] },
    { why: 'over the size: the oldest leave until the rest fit', live: [fin('a', 60), fin('b', 30), fin('c', 30)], maxTasks: 10, maxBytes: 60, out: ['a'] },
    { why: 'one task larger than the size bound leaves too', live: [fin('a', 500)], maxTasks: 10, maxBytes: 100, out: ['a'] },
    {
      why: 'running and queued tasks never leave and do not count',
      live: [run('r'), fin('a', 50), run('q'), fin('b', 50)],
      maxTasks: 1,
      maxBytes: 50,
      out: ['a'],
    },
    {
      why: 'a finished task with a stream open stays, and counts',
      live: [fin('a', 50, 1), fin('b', 50), fin('c', 50)],
      maxTasks: 10,
      maxBytes: 100,
      out: ['b'],
    },
    { why: 'when only subscribed ones remain over the bound, they stay', live: [fin('a', 80, 1), fin('b', 80, 2)], maxTasks: 10, maxBytes: 100, out: [] },
  ])('$why', ({ live, maxTasks, maxBytes, out }) => {
    expect(evictions(live, { maxTasks, maxBytes }, finishedTotals(live))).toEqual(out);
  });

  it('reads the live table only as far as it must', () => {
    const live = [fin('a', 10), fin('b', 10), fin('c', 10), fin('d', 10)];
    let read = 0;
    const lazy = (function* () {
      for (const e of live) {
        read++;
        yield e;
      }
    })();
    expect(evictions(lazy, { maxTasks: 3, maxBytes: 100 }, finishedTotals(live))).toEqual(['a']);
    expect(read).toBe(1);
  });

  it('sizes text, URLs, raw bytes and data by what they hold', () => {
    expect(partBytes(textPart('abcd'))).toBe(4);
    expect(partBytes(dataPart({ k: [1, 2] }))).toBe(JSON.stringify({ k: [1, 2] }).length);
    expect(partBytes({ content: { $case: 'raw', value: Buffer.alloc(1000) }, metadata: undefined, filename: 'f', mediaType: 'application/octet-stream' })).toBe(
      1000,
    );
    expect(partBytes({ content: { $case: 'url', value: 'https://x.test/f' }, metadata: undefined, filename: '', mediaType: '' })).toBe(16);
    expect(partBytes({ content: undefined, metadata: undefined, filename: '', mediaType: '' })).toBe(0);
    const m = (t: string): Message => ({
      messageId: 'm',
      role: Role.ROLE_USER,
      parts: [textPart(t)],
      contextId: '',
      taskId: '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    expect(
      retainedBytes({ history: [m('12345'), m('678')], artifacts: [artifact('response', [textPart('ab')], { name: 'response' })], statusMessage: m('x') }),
    ).toBe(11);
  });

  it('the machine drops finished tasks of 100 KiB past its size bound, and the store still answers for them', async () => {
    const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: 'alice' } });
    const m = new TaskMachine({
      executor: async (ctx) => ({ state: 'completed', text: `read ${ctx.text.length}` }),
      acceptance: 'queue',
      queueDepth: 4,
      maxLiveTasks: 1000,
      maxLiveBytes: 300 * 1024,
      store: new InMemoryTaskStore(),
      stream: { maxQueued: 16, maxBuffered: 1 << 20, heartbeatMs: 0 },
    });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const text = String(i).repeat(100 * 1024);
      const rec = m.create({
        message: {
          messageId: `m${i}`,
          role: Role.ROLE_USER,
          parts: [textPart(text)],
          contextId: '',
          taskId: '',
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        origin: 'user',
        trust: 'untrusted',
        traceparent: undefined,
        caller,
      });
      m.admit(rec);
      ids.push(rec.id);
      await m.idle();
    }
    // Each keeps its 100 KiB input and a short answer: two fit under 300 KiB, three do not.
    expect(ids.map((id) => m.isLive(id))).toEqual([false, false, false, false, true, true]);
    const first = await m.load(ids[0]!, caller);
    expect(first?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const text = first?.history[0]?.parts[0]?.content;
    expect(text?.$case === 'text' && text.value.length).toBe(100 * 1024);
    expect(first?.artifacts[0]?.parts[0]?.content).toMatchObject({ value: `read ${100 * 1024}` });
  });
});
