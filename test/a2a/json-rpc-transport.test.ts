/**
 * The JSON-RPC binding served over plain node:http (runtime/a2a/server/json-rpc.ts) keeps what the
 * express chain did: the SDK express adapter's answers byte for byte (compared with that adapter
 * mounted here on the same request handler, a real server both ways), a body read whole however
 * it is chunked, and the activity hold released when a stream's client goes away.
 */
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { ActivityTracker } from '../../runtime/telemetry/activity.ts';
import { closeAll, msg03, msg10, serve, until, V1 } from './helpers.ts';
import { call, closeDoors, post, twoDoors, type Raw } from './doors.ts';

afterAll(async () => {
  await closeAll();
  await closeDoors();
});

const echo: TaskExecutor = async (ctx, ev) => {
  ev.textChunk('echo: ');
  ev.textChunk(ctx.text);
  return { state: 'completed', text: `echo: ${ctx.text}` };
};

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;

/** Two tasks' answers made comparable: each distinct id by its order of appearance, times blanked (lengths kept). */
function shape(r: Raw): Raw {
  const ids = new Map<string, string>();
  const body = r.body
    .replace(UUID, (u) => {
      if (!ids.has(u)) ids.set(u, `id-${String(ids.size).padStart(32, '0')}`);
      return ids.get(u)!;
    })
    .replace(TIME, (t) => 'T'.repeat(t.length));
  return { ...r, body };
}

describe('JSON-RPC over node:http', () => {
  it("answers a task's 0.3 and 1.0 calls with the SDK express adapter's status, headers and bytes", async () => {
    const { ours, sdk } = await twoDoors(echo);
    const versions = [
      { headers: {} as Record<string, string>, send: 'message/send', stream: 'message/stream', get: 'tasks/get', cancel: 'tasks/cancel', msg: msg03 },
      { headers: V1, send: 'SendMessage', stream: 'SendStreamingMessage', get: 'GetTask', cancel: 'CancelTask', msg: msg10 },
    ];
    for (const v of versions) {
      // Two tasks, one through each door: the same answer but for their ids and times.
      const send = call(v.send, { message: v.msg('hello') });
      const sentOurs = await post(ours, send, v.headers);
      const sentSdk = await post(sdk, send, v.headers);
      expect(sentOurs.status).toBe(200);
      expect(sentOurs.body).toContain('echo: hello');
      expect(shape(sentOurs)).toEqual(shape(sentSdk));
      // One task read through both doors: the very same bytes.
      const taskId = (JSON.parse(sentOurs.body).result.task ?? JSON.parse(sentOurs.body).result).id as string;
      const getBody = call(v.get, { id: taskId, historyLength: 10 });
      expect(await post(ours, getBody, v.headers)).toEqual(await post(sdk, getBody, v.headers));
      // Errors of the SDK's own mapping: an unknown task, a task that cannot be canceled.
      const missing = call(v.get, { id: 'no-such-task' });
      expect(await post(ours, missing, v.headers)).toEqual(await post(sdk, missing, v.headers));
      const cancel = call(v.cancel, { id: taskId });
      expect(await post(ours, cancel, v.headers)).toEqual(await post(sdk, cancel, v.headers));
      // A stream: SSE headers, one `data:` frame per event, the end.
      const stream = call(v.stream, { message: v.msg('streamed') });
      const streamOurs = await post(ours, stream, v.headers);
      const streamSdk = await post(sdk, stream, v.headers);
      expect(streamOurs.headers).toContain('text/event-stream');
      expect(streamOurs.body.split('\n\ndata: ').length).toBeGreaterThan(2);
      expect(shape(streamOurs)).toEqual(shape(streamSdk));
    }
    // 0.3's tasks/resubscribe of an ended task: SSE from the start, the error as an SSE error event.
    const sent = JSON.parse((await post(ours, call('message/send', { message: msg03('again') }))).body);
    const resubscribe = call('tasks/resubscribe', { id: sent.result.id });
    expect(await post(ours, resubscribe)).toEqual(await post(sdk, resubscribe));
  });

  it('reads no request but POST / as JSON-RPC: any other path is a 404, whatever its body or Content-Type', async () => {
    const s = await serve(echo);
    const body = call('SendMessage', { message: msg10('lost') });
    for (const [path, type, payload] of [
      ['nope', 'text/plain', body],
      ['nope', 'application/json', '{not json'],
      ['rpc/', 'application/json', body],
    ] as const) {
      const r = await fetch(new URL(path, s.url), { method: 'POST', headers: { 'content-type': type, ...V1 }, body: payload });
      expect({ path, type, status: r.status }).toEqual({ path, type, status: 404 });
      expect((await r.json()).error).toMatch(/^not found: POST \/ for JSON-RPC/);
    }
    expect(s.stats().tasks).toBe(0);
  });

  it('reads a body whole however it is chunked, a character split between two chunks', async () => {
    const s = await serve(echo);
    const text = 'naïve € ✓ 漢字';
    const bytes = Buffer.from(call('SendMessage', { message: msg10(text) }));
    const at = bytes.indexOf(Buffer.from('€'));
    const answer = await new Promise<any>((resolve, reject) => {
      // Chunked transfer coding: every write is a chunk of its own, and the server reads each apart.
      const req = http.request(s.url, { method: 'POST', headers: { 'content-type': 'application/json', ...V1 } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      });
      req.on('error', reject);
      const cuts = [0, 1, 7, 20, at + 1, at + 2, bytes.length - 3, bytes.length];
      for (let i = 1; i < cuts.length; i++) req.write(bytes.subarray(cuts[i - 1]!, cuts[i]!));
      req.end();
    });
    expect(answer.error).toBeUndefined();
    const task = answer.result.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(JSON.stringify(task)).toContain(`echo: ${text}`);
  });

  it('releases the activity hold and the subscriber when a stream client goes away', async () => {
    const activity = new ActivityTracker();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const s = await serve(
      async (_ctx, ev) => {
        ev.textChunk('first');
        await gate;
        return { state: 'completed', text: 'done' };
      },
      { activity, stream: { heartbeatMs: 0 } },
    );
    const req = http.request(s.url, { method: 'POST', headers: { 'content-type': 'application/json', ...V1 } });
    const firstFrame = new Promise<void>((resolve, reject) => {
      req.on('response', (res) => {
        res.on('data', (c: Buffer) => {
          if (c.toString('utf8').includes('data: ')) resolve();
        });
        res.on('error', () => {});
      });
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
    });
    req.end(call('SendStreamingMessage', { message: msg10('hold me') }));
    await firstFrame;
    // The task and the request each hold the capsule awake.
    expect(s.stats().subscribers).toBe(1);
    expect(activity.open).toBe(2);
    req.destroy();
    await until(s, () => s.stats().subscribers === 0);
    expect(activity.open).toBe(1);
    release();
    await until(s, () => s.stats().running === 0 && activity.open === 0);
  });
});
