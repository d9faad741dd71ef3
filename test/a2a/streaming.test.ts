/** A slow or vanished SSE reader never blocks the executor; one final status per task. */
import http from 'node:http';
import { setImmediate as tick } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { closeAll, msg03, msg10, rpc, serve, until, V1 } from './helpers.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';

afterAll(closeAll);

const CHUNK = 'x'.repeat(4096);
const N = 3000; // ~12 MiB of chunks, far beyond socket buffers

/** An executor that floods chunks; `done` resolves when it has pushed them all (a blocked one never does). */
function flood(): { exec: TaskExecutor; done: Promise<void> } {
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));
  const exec: TaskExecutor = async (_ctx, ev) => {
    for (let i = 0; i < N; i++) {
      ev.textChunk(CHUNK);
      if (i % 100 === 0) await tick();
    }
    finished();
    return { state: 'completed', text: 'the full answer' };
  };
  return { exec, done };
}

/** Open a message/stream and return the response, paused (nothing is read until resume()). */
function openStream(url: string): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/stream', params: { message: msg03('go') } });
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.pause();
      resolve({ req, res });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function parseFrames(raw: string): any[] {
  return raw
    .split('\n\n')
    .map((f) =>
      f
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join(''),
    )
    .filter((d) => d !== '')
    .map((d) => JSON.parse(d).result);
}

describe('stream backpressure', () => {
  it('a reader that does not read: the executor finishes, events are dropped with a lagged notice, the final status arrives once', async () => {
    const f = flood();
    const s = await serve(f.exec, { stream: { maxBufferedBytes: 256 * 1024 } });
    const { res } = await openStream(s.url);
    // The reader has read nothing, and the executor still gets to the end of its chunks.
    await f.done;
    expect(s.stats().laggedDrops).toBeGreaterThan(0);
    // Now read everything.
    res.setEncoding('utf8');
    let raw = '';
    res.on('data', (d) => (raw += d));
    res.resume();
    await new Promise((r) => res.on('end', r));
    const events = parseFrames(raw);
    const lagged = events.filter((e) => e.kind === 'status-update' && e.metadata?.murmur?.lagged);
    expect(lagged.length).toBeGreaterThan(0);
    const finals = events.filter((e) => e.kind === 'status-update' && e.final);
    expect(finals).toHaveLength(1);
    expect(events.at(-1)).toBe(finals[0]);
    expect(finals[0].status.state).toBe('completed');
    // The final response artifact replaces the (partly dropped) chunks.
    const lastArtifact = events.filter((e) => e.kind === 'artifact-update').at(-1);
    expect(lastArtifact).toMatchObject({ append: false, lastChunk: true, artifact: { parts: [{ text: 'the full answer' }] } });
    expect(events.filter((e) => e.kind === 'artifact-update').length).toBeLessThan(N);
  });

  it('a reader that vanishes: the executor finishes and the subscriber is released', async () => {
    const f = flood();
    const s = await serve(f.exec);
    const { req, res } = await openStream(s.url);
    res.destroy();
    req.destroy();
    await f.done;
    await s.idle();
    await until(s, () => s.stats().subscribers === 0);
  });
});

describe('heartbeat', () => {
  it('a quiet stream carries SSE comment heartbeats that clients ignore', async () => {
    const { ClientFactory } = await import('@a2a-js/sdk/client');
    const { Role } = await import('@a2a-js/sdk');
    // The executor stays quiet until the server reports a heartbeat written to the stream.
    let heartbeat: (() => void) | undefined;
    const s = await serve(
      async () => {
        await new Promise<void>((r) => (heartbeat = r));
        return { state: 'completed', text: 'late' };
      },
      { stream: { heartbeatMs: 40, onHeartbeat: () => heartbeat?.() } },
    );
    const r = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/stream', params: { message: msg03('q') } }),
    });
    const raw = await r.text();
    expect(raw).toContain(': heartbeat\n\n');
    const finals = parseFrames(raw).filter((e) => e.kind === 'status-update' && e.final);
    expect(finals).toHaveLength(1);
    const client = await new ClientFactory().createFromUrl(s.url);
    const events = [];
    for await (const e of client.sendMessageStream({
      tenant: '',
      message: {
        messageId: 'h',
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [{ content: { $case: 'text', value: 'q' }, metadata: undefined, filename: '', mediaType: '' }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    }))
      events.push(e);
    expect(events.at(-1)?.payload?.$case).toBe('statusUpdate');
  });
});

/** An executor whose task `text` runs until `release(text)`; `started(text)` resolves once it runs. */
function held() {
  const releases = new Map<string, () => void>();
  const waiting = new Map<string, () => void>();
  const exec: TaskExecutor = (ctx) =>
    new Promise((resolve) => {
      releases.set(ctx.text, () => resolve({ state: 'completed', text: `done ${ctx.text}` }));
      waiting.get(ctx.text)?.();
    });
  const started = (text: string) => (releases.has(text) ? Promise.resolve() : new Promise<void>((r) => waiting.set(text, r)));
  const release = async (text: string) => {
    await started(text);
    releases.get(text)!();
  };
  return { exec, release };
}

/** A streaming call read as it arrives: `heartbeat` resolves at the first SSE heartbeat, `ended` at the response's end. */
function openRaw(url: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  let sawHeartbeat!: () => void;
  const heartbeat = new Promise<void>((r) => (sawHeartbeat = r));
  const ended = new Promise<string>((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let raw = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        raw += d;
        if (raw.includes(': heartbeat\n\n')) sawHeartbeat();
      });
      res.on('end', () => resolve(raw));
    });
    req.on('error', reject);
    req.end(body);
  });
  return { heartbeat, ended };
}

describe('stream responses', () => {
  it('each streaming method finds its own response: heartbeats reach message/stream, SendStreamingMessage, tasks/resubscribe and SubscribeToTask', async () => {
    const h = held();
    const s = await serve(h.exec, { stream: { heartbeatMs: 40 } });
    const taskOf = async (text: string) =>
      (await rpc(s.url, 'message/send', { message: msg03(text), configuration: { blocking: false } })).body.result.id as string;
    const streams = [
      { text: 'a', open: () => openRaw(s.url, 'message/stream', { message: msg03('a') }) },
      { text: 'b', open: () => openRaw(s.url, 'SendStreamingMessage', { message: msg10('b') }, V1) },
      { text: 'c', open: async () => openRaw(s.url, 'tasks/resubscribe', { id: await taskOf('c') }) },
      { text: 'd', open: async () => openRaw(s.url, 'SubscribeToTask', { id: await taskOf('d') }, V1) },
    ];
    for (const st of streams) {
      const o = await st.open();
      await o.heartbeat;
      await h.release(st.text);
      expect(await o.ended).toContain(`done ${st.text}`);
    }
  });

  it("only a stream's response is tracked for its subscriber, and only while it is open", async () => {
    const h = held();
    const s = await serve(h.exec, { stream: { heartbeatMs: 0 } });
    const id = (await rpc(s.url, 'message/send', { message: msg03('a'), configuration: { blocking: false } })).body.result.id as string;
    // The HTTP+JSON door tracks every request (its streams are told by path) and lets each go at its end.
    const viaRest = await fetch(`${s.restUrl}/tasks/${id}`, { headers: V1 });
    expect(((await viaRest.json()) as { id: string }).id).toBe(id);
    for (let i = 0; i < 5; i++) expect((await rpc(s.url, 'tasks/get', { id })).body.result.id).toBe(id);
    expect((await rpc(s.url, 'GetTask', { id }, V1)).body.result.id).toBe(id);
    expect(s.stats().streamResponses).toBe(0);
    const o = openRaw(s.url, 'message/stream', { message: msg03('b') });
    await until(s, () => s.stats().subscribers === 1);
    expect(s.stats().streamResponses).toBe(1);
    await h.release('a');
    await h.release('b');
    expect(await o.ended).toContain('done b');
    // A request after the stream's end: the server has handled its response's close by then.
    await rpc(s.url, 'tasks/get', { id });
    expect(s.stats().streamResponses).toBe(0);
  });
});
