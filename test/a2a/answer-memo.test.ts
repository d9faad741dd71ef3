/**
 * The answer memo of task reads (runtime/a2a/server/answer-memo.ts): a repeated `tasks/get` /
 * `GetTask` of an unchanged task is answered without the request handler, with the very bytes the
 * SDK's express adapter answers (compared with that adapter mounted on the same handler, a real
 * server both ways); a read after any change of the task answers the change; another caller's read
 * never reaches a kept answer; and the memo stays within its bounds.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import { AnswerMemo, MAX_ANSWERS, MAX_ANSWER_CHARS, MAX_CHARS, envelopeText, resultText } from '../../runtime/a2a/server/answer-memo.ts';
import type { TaskEvents, TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { closeAll, msg03, msg10, rpc, serve, V1 } from './helpers.ts';
import { call, closeDoors, post, twoDoors } from './doors.ts';

afterAll(async () => {
  await closeAll();
  await closeDoors();
});

const VERSIONS = [
  { name: '0.3', headers: {} as Record<string, string>, send: 'message/send', get: 'tasks/get', msg: msg03, state: (b: any) => b.result.status.state },
  { name: '1.0', headers: V1, send: 'SendMessage', get: 'GetTask', msg: msg10, state: (b: any) => b.result.status.state },
];

/** An executor that reports in three steps, each after the test opens its gate. */
function stepped(): { executor: TaskExecutor; open: () => void } {
  let gates: Array<() => void> = [];
  const next = () => new Promise<void>((r) => gates.push(r));
  return {
    open: () => {
      const g = gates;
      gates = [];
      for (const r of g) r();
    },
    executor: async (_ctx, ev: TaskEvents) => {
      await next();
      ev.status('thinking');
      ev.textChunk('half');
      await next();
      ev.artifact({ name: 'notes', text: 'a note' });
      ev.textChunk(' and whole');
      await next();
      return { state: 'completed', text: 'half and whole' };
    },
  };
}

/** Resolves after the machine's next change (every task event is one). */
function changed(machine: TaskMachine): Promise<void> {
  return new Promise((r) => {
    const off = machine.onChange(() => {
      off();
      r();
    });
  });
}

describe('the answer memo of task reads', () => {
  for (const v of VERSIONS) {
    it(`answers a repeated ${v.get} of an unchanged task with the SDK adapter's bytes, without the request handler (${v.name})`, async () => {
      const { ours, sdk, counter } = await twoDoors(async (ctx) => ({ state: 'completed', text: `echo: ${ctx.text}` }), { memo: true });
      const sent = JSON.parse((await post(ours, call(v.send, { message: v.msg('hello') }), v.headers)).body);
      const taskId = (sent.result.task ?? sent.result).id as string;
      for (const id of [7, 'req-8', null]) {
        const get = call(v.get, { id: taskId }, id);
        const first = await post(ours, get, v.headers);
        const again = await post(ours, get, v.headers);
        expect(first).toEqual(await post(sdk, get, v.headers));
        expect(again).toEqual(first);
      }
      // Three ids, one question: the handler answered it once, the memo twice more for each id.
      expect(counter.reads).toBe(1);
    });

    it(`answers a ${v.get} after each change of the task with its new state (${v.name})`, async () => {
      const { executor, open } = stepped();
      const { ours, sdk, machine } = await twoDoors(executor, { memo: true });
      const sent = JSON.parse(
        (await post(ours, call(v.send, { message: v.msg('go'), configuration: { blocking: false, returnImmediately: true } }), v.headers)).body,
      );
      const taskId = (sent.result.task ?? sent.result).id as string;
      const get = call(v.get, { id: taskId, historyLength: 5 });
      const seen: string[] = [];
      for (let step = 0; step < 4; step++) {
        const answer = await post(ours, get, v.headers);
        expect(await post(ours, get, v.headers)).toEqual(answer);
        expect(answer).toEqual(await post(sdk, get, v.headers));
        seen.push(answer.body);
        if (step < 3) {
          const next = changed(machine);
          open();
          await next;
          // The executor's reports of a step come together: let the last of them land.
          await new Promise((r) => setImmediate(r));
        }
      }
      expect(new Set(seen).size).toBe(4);
      expect(JSON.parse(seen.at(-1)!).result.artifacts.map((a: { name?: string }) => a.name)).toEqual(['response', 'notes']);
      expect(seen.at(-1)).toContain('half and whole');
    });
  }

  it('keeps reads that ask differently apart: a historyLength of 0 is not the whole history', async () => {
    const { ours, sdk } = await twoDoors(async (ctx) => ({ state: 'completed', text: `echo: ${ctx.text}` }), { memo: true });
    const sent = JSON.parse((await post(ours, call('message/send', { message: msg03('hi') }))).body);
    const whole = call('tasks/get', { id: sent.result.id });
    const none = call('tasks/get', { id: sent.result.id, historyLength: 0 });
    const a = await post(ours, whole);
    const b = await post(ours, none);
    expect(JSON.parse(a.body).result.history).toHaveLength(1);
    expect(JSON.parse(b.body).result.history ?? []).toHaveLength(0);
    expect(await post(ours, whole)).toEqual(await post(sdk, whole));
    expect(await post(ours, none)).toEqual(await post(sdk, none));
  });

  it("answers another caller's read of a task whose answer is kept as not found", async () => {
    const auth = createAuthenticator({
      apiKeys: [
        { name: 'alice', key: 'alice-key-0123456789' },
        { name: 'bob', key: 'bob-key-0123456789' },
      ],
      anonymous: false,
    });
    const s = await serve(async () => ({ state: 'completed', text: 'secret' }), { auth });
    const alice = { authorization: 'Bearer alice-key-0123456789' };
    const bob = { authorization: 'Bearer bob-key-0123456789' };
    const sent = await rpc(s.url, 'message/send', { message: msg03('mine') }, alice);
    const id = sent.body.result.id as string;
    for (let i = 0; i < 2; i++) expect((await rpc(s.url, 'tasks/get', { id }, alice)).body.result.status.state).toBe('completed');
    const other = await rpc(s.url, 'tasks/get', { id }, bob);
    expect(other.body.result).toBeUndefined();
    expect(other.body.error.code).toBe(-32001);
    expect(JSON.stringify(other.body)).not.toContain('secret');
  });
});

describe('AnswerMemo', () => {
  it('keeps an answer only while the parts it was made from are the same, element by element', () => {
    const memo = new AnswerMemo();
    const art = { name: 'a' };
    memo.set('k', ['working', art], '{"x":1}');
    expect(memo.get('k', ['working', art])).toBe('{"x":1}');
    expect(memo.get('k', ['working', { name: 'a' }])).toBeUndefined();
    expect(memo.get('k', ['working', art, 'more'])).toBeUndefined();
    expect(memo.get('other', ['working', art])).toBeUndefined();
  });

  it(`keeps at most ${MAX_ANSWERS} answers and ${MAX_CHARS} characters, the oldest out first, and none over ${MAX_ANSWER_CHARS}`, () => {
    const memo = new AnswerMemo();
    for (let i = 0; i <= MAX_ANSWERS; i++) memo.set(`k${i}`, [i], `"${i}"`);
    expect(memo.size).toBe(MAX_ANSWERS);
    expect(memo.get('k0', [0])).toBeUndefined();
    expect(memo.get(`k${MAX_ANSWERS}`, [MAX_ANSWERS])).toBe(`"${MAX_ANSWERS}"`);
    const big = 'x'.repeat(MAX_ANSWER_CHARS);
    const fill = Math.ceil(MAX_CHARS / MAX_ANSWER_CHARS) + 1;
    for (let i = 0; i < fill; i++) memo.set(`big${i}`, [i], big);
    expect(memo.get('big0', [0])).toBeUndefined();
    expect(memo.get(`big${fill - 1}`, [fill - 1])).toBe(big);
    memo.set('huge', [0], `${big}x`);
    expect(memo.get('huge', [0])).toBeUndefined();
  });

  it("rebuilds the SDK envelope's bytes from the result's text, and keeps nothing of an error answer", () => {
    for (const id of [1, 'abc', null, 'quote " and \u2028']) {
      const envelope = { jsonrpc: '2.0', id, result: { kind: 'task', id: 't', artifacts: [{ parts: [{ text: 'é ✓' }] }] } };
      const text = JSON.stringify(envelope);
      const result = resultText(envelope, text)!;
      expect(result).toBe(JSON.stringify(envelope.result));
      expect(envelopeText(id, result)).toBe(text);
    }
    const error = { jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'not found' } };
    expect(resultText(error, JSON.stringify(error))).toBeUndefined();
  });
});
