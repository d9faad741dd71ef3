/**
 * The side-by-side bench's one client (bench/task-poller.ts) against this runtime's real A2A server
 * over real HTTP, through a loopback forwarder that records what the server was asked and answered.
 * A task is let finish only once its `message/send` has been answered, so a client that waits in
 * the send for completion (as the bench's old client did for this runtime) never finishes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { TaskClient } from '../../bench/task-poller.ts';
import { closeAll, serve } from '../a2a/helpers.ts';

afterAll(closeAll);

interface Call {
  method: string;
  params: Record<string, any>;
  answer: Record<string, any>;
}

/** Forwards every POST to `target`, recording the call; counts the client's connections. */
async function forwarder(
  target: string,
  onAnswer: (c: Call) => void,
): Promise<{ url: string; calls: Call[]; connections(): number; inFlightGets: () => Map<string, number>; close(): Promise<void> }> {
  const calls: Call[] = [];
  const agent = new http.Agent({ keepAlive: true });
  const inFlight = new Map<string, number>();
  const maxSame = new Map<string, number>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rpc = JSON.parse(body.toString()) as { method: string; params: Record<string, any> };
      const id = rpc.method === 'tasks/get' ? String(rpc.params.id) : '';
      if (id) {
        inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
        maxSame.set(id, Math.max(maxSame.get(id) ?? 0, inFlight.get(id)!));
      }
      const u = new URL(target);
      const out = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (r) => {
          const back: Buffer[] = [];
          r.on('data', (c: Buffer) => back.push(c));
          r.on('end', () => {
            if (id) inFlight.set(id, inFlight.get(id)! - 1);
            const call = { method: rpc.method, params: rpc.params, answer: JSON.parse(Buffer.concat(back).toString()) as Record<string, any> };
            calls.push(call);
            onAnswer(call);
            res.writeHead(r.statusCode ?? 500, { 'content-type': 'application/json' }).end(Buffer.concat(back));
          });
        },
      );
      out.end(body);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    calls,
    connections: () => connections,
    inFlightGets: () => maxSame,
    close: () =>
      new Promise((r) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('bench task client (bench/task-poller.ts)', () => {
  it('sends each task non-blocking and finds it completed through the one tasks/get poller', async () => {
    // A task finishes only when released; it is released once its send was answered.
    const released = new Set<string>();
    const gates = new Map<string, () => void>();
    const release = (id: string): void => {
      released.add(id);
      gates.get(id)?.();
    };
    const exec: TaskExecutor = (ctx) =>
      new Promise((resolve) => {
        const done = (): void => resolve({ state: 'completed', text: `done ${ctx.text}` });
        if (released.has(ctx.taskId)) done();
        else gates.set(ctx.taskId, done);
      });
    const s = await serve(exec);
    const fwd = await forwarder(s.url, (c) => {
      if (c.method === 'message/send' && c.answer.result?.id) release(c.answer.result.id as string);
    });
    const client = new TaskClient(fwd.url);
    try {
      await client.run(0, 6, 3);
    } finally {
      client.close();
      await fwd.close();
    }
    const sends = fwd.calls.filter((c) => c.method === 'message/send');
    const gets = fwd.calls.filter((c) => c.method === 'tasks/get');
    expect(sends).toHaveLength(6);
    for (const c of sends) {
      expect(c.params.configuration).toEqual({ blocking: false });
      expect(c.answer.result.status.state).not.toBe('completed');
    }
    // Every task was seen completed by a tasks/get, each at most once at a time (one poller).
    const completed = new Set(gets.filter((c) => c.answer.result?.status?.state === 'completed').map((c) => c.params.id as string));
    expect(completed).toEqual(new Set(sends.map((c) => c.answer.result.id as string)));
    expect(Math.max(...fwd.inFlightGets().values())).toBe(1);
    // One keep-alive agent: connections are reused, not one per request.
    expect(fwd.connections()).toBeLessThan(fwd.calls.length);
  });
});
