/** A slow or vanished SSE reader never blocks the executor; one final status per task. */
import http from 'node:http';
import { setImmediate as tick } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { closeAll, msg03, serve, until } from './helpers.ts';
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
