/**
 * Slow and greedy clients (issue 38 §4), over real sockets: node:net clients that dribble their
 * headers or body are cut by the server's budgets (short ones here, set through `limits`), each
 * test waiting for the server to close the socket; one remote address holds at most
 * `maxConnectionsPerClient` connections; an SSE stream that outlives the request budget is not cut.
 */
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { a2aLimitsFromEnv } from '../../runtime/cli/serve.ts';
import { closeAll, msg10, serve, sse, V1 } from './helpers.ts';

afterAll(closeAll);

interface RawClient {
  socket: net.Socket;
  /** Everything the server sent, once it has closed the connection. */
  closed: Promise<string>;
}

function connect(port: number, localAddress = '127.0.0.1'): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (got += d));
    const closed = new Promise<string>((r) => socket.on('close', () => r(got)));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

/** Writes one byte of `text` per `everyMs` until the server closes the connection. */
function dribble(c: RawClient, text: string, everyMs = 20): void {
  let i = 0;
  const t = setInterval(() => {
    if (i >= text.length || c.socket.destroyed) return clearInterval(t);
    c.socket.write(text[i++]!);
  }, everyMs);
  c.socket.once('close', () => clearInterval(t));
}

const echo: TaskExecutor = async (ctx) => ({ state: 'completed', text: ctx.text });

describe('connection budgets', () => {
  it('a client dribbling its body is cut by the request budget with a 408 naming it', async () => {
    const s = await serve(echo, { limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 } });
    const c = await connect(s.port);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: msg10('slow') } });
    c.socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${body.length}\r\n\r\n`);
    // One byte every 20 ms: the body would take seconds, the socket is never idle.
    dribble(c, body);
    const answer = await c.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('[E-A2A-042]');
    expect(answer).toContain('whole request 0.4 s');
    expect(s.stats().tasks).toBe(0);
  });

  it('a client dribbling its headers is cut by the headers budget', async () => {
    const s = await serve(echo, { limits: { headersTimeoutMs: 200, requestTimeoutMs: 5000 } });
    const c = await connect(s.port);
    dribble(c, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(500)}\r\n\r\n`);
    const answer = await c.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('headers 0.2 s');
  });

  it('a connection that never sends a byte is closed by the headers budget', async () => {
    const s = await serve(echo, { limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 } });
    const c = await connect(s.port);
    await c.closed;
    expect(c.socket.destroyed).toBe(true);
  });

  it('an SSE stream outliving the request budget is not cut', async () => {
    let beats = 0;
    const beat: Array<() => void> = [];
    let release!: (text: string) => void;
    const released = new Promise<string>((r) => (release = r));
    const s = await serve(async () => ({ state: 'completed', text: await released }), {
      limits: { headersTimeoutMs: 100, requestTimeoutMs: 200 },
      stream: {
        heartbeatMs: 20,
        onHeartbeat: () => {
          beats++;
          for (const f of beat.splice(0)) f();
        },
      },
    });
    const events = sse(s.url, 'SendStreamingMessage', { message: msg10('long') }, V1);
    // 25 heartbeats at ≥ 20 ms apart: the stream has been open well past the 200 ms budget.
    await new Promise<void>((r) => {
      const check = () => (beats >= 25 ? r() : beat.push(check));
      check();
    });
    expect(s.stats().subscribers).toBe(1);
    release('finally');
    const got = await events;
    const states = got.map((e) => e.result?.statusUpdate?.status?.state).filter(Boolean);
    expect(states.at(-1)).toBe('TASK_STATE_COMPLETED');
  });

  it('refuses a headers budget longer than the request budget (E-A2A-040)', async () => {
    await expect(serve(echo, { limits: { headersTimeoutMs: 2000, requestTimeoutMs: 1000 } })).rejects.toMatchObject({ code: 'E-A2A-040' });
    await expect(serve(echo, { limits: { maxConnectionsPerClient: -1 } })).rejects.toThrow(/maxConnectionsPerClient must be a whole number/);
  });
});

describe('mur serve limits from the environment', () => {
  it('takes each MURMUR_A2A_* limit, defaults the unset ones, and refuses a bad value by name (E-A2A-040)', () => {
    const l = a2aLimitsFromEnv({ MURMUR_A2A_REQUEST_TIMEOUT_MS: '5000', MURMUR_A2A_MAX_CONNECTIONS_PER_CLIENT: '0', MURMUR_A2A_PUSH_MAX_URL_LENGTH: '512' });
    expect(l.connections).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 5000, keepAliveTimeoutMs: 65_000, maxConnectionsPerClient: 0 });
    expect(l.push).toEqual({ maxConfigsPerTask: 10, maxConfigsPerCaller: 100, maxUrlLength: 512 });
    expect(() => a2aLimitsFromEnv({ MURMUR_A2A_HEADERS_TIMEOUT_MS: '10s' })).toThrow(
      /MURMUR_A2A_HEADERS_TIMEOUT_MS must be a number of milliseconds ≥ 0, not "10s"/,
    );
    expect(() => a2aLimitsFromEnv({ MURMUR_A2A_PUSH_MAX_CONFIGS_PER_TASK: '-1' })).toThrow(expect.objectContaining({ code: 'E-A2A-040' }));
  });
});

describe('connections per client', () => {
  it('past the cap a connection gets 503 with Retry-After before its request is read; other clients are served', async () => {
    const s = await serve(echo, { limits: { maxConnectionsPerClient: 3 } });
    const holders = [await connect(s.port), await connect(s.port), await connect(s.port)];
    const extra = await connect(s.port);
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const answer = await extra.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/\r\nRetry-After: 1\r\n/);
    expect(answer).toContain('at most 3 open connections per client');
    expect(answer).toContain('[E-A2A-041]');
    // Another remote address (127.0.0.2 is loopback too) has its own count.
    const other = await connect(s.port, '127.0.0.2');
    other.socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await other.closed).toMatch(/^HTTP\/1\.1 200 /);
    // A held connection closes: the client may connect again (once the server has seen the close).
    holders[0]!.socket.destroy();
    let status = '';
    for (let attempt = 0; attempt < 100 && !status.startsWith('HTTP/1.1 200'); attempt++) {
      const again = await connect(s.port);
      again.socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      status = await again.closed;
    }
    expect(status).toMatch(/^HTTP\/1\.1 200 /);
    for (const h of holders) h.socket.destroy();
  });
});
