/**
 * One task machine and request handler behind two HTTP servers, for comparing this runtime's
 * JSON-RPC transport (runtime/a2a/server/json-rpc.ts) with the SDK's express `jsonRpcHandler` as
 * routes.ts mounted it before (the app's settings: no ETag, no X-Powered-By; the caller anonymous;
 * the response mapped from the headers for streams), and a raw POST that reads both answers byte
 * for byte. Used by json-rpc-transport.test.ts and answer-memo.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { InMemoryTaskStore, type A2ARequestHandler } from '@a2a-js/sdk/server';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { TaskMachine } from '../../runtime/a2a/tasks/tasks.ts';
import { createHandler } from '../../runtime/a2a/handler/handler.ts';
import { buildCoreCard } from '../../runtime/a2a/server/card.ts';
import { ANONYMOUS, OPEN } from '../../runtime/a2a/server/auth.ts';
import { jsonRpcTransport } from '../../runtime/a2a/server/json-rpc.ts';
import { ResponseOf } from '../../runtime/a2a/server/response-of.ts';
import { taskPartsOf } from '../../runtime/a2a/server/server.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';

const servers: http.Server[] = [];

/** Closes every server `twoDoors` started (a test file's afterAll). */
export async function closeDoors(): Promise<void> {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
}

async function listen(server: http.Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/**
 * The two doors over one machine. `memo`: this runtime's door answers repeated task reads from its
 * answer memo (as `startA2AServer` does without replicas). `counter.reads` counts the task reads
 * that reached the request handler through this runtime's door.
 */
export async function twoDoors(executor: TaskExecutor, o: { memo?: boolean } = {}) {
  const machine = new TaskMachine({
    executor,
    acceptance: 'queue',
    queueDepth: 16,
    maxLiveTasks: 100,
    store: new InMemoryTaskStore(),
    stream: { maxQueued: 256, maxBuffered: 1024 * 1024, heartbeatMs: 0 },
  });
  const resOf = new ResponseOf();
  const card = buildCoreCard({ name: 't', version: '0.1.0', description: 't' }, { jsonrpc: 'http://127.0.0.1/' });
  const inner = createHandler({ machine, card, sinkOf: (c) => resOf.get(c.state.get('headers') as object) });
  const counter = { reads: 0 };
  const handler: A2ARequestHandler = {
    ...inner,
    getTask: (params, context) => {
      counter.reads++;
      return inner.getTask(params, context);
    },
  };
  const ours = await listen(
    http.createServer(
      jsonRpcTransport({ handler, auth: OPEN, resOf, maxBody: 1024 * 1024, draining: () => false, ...(o.memo ? { taskParts: taskPartsOf(machine) } : {}) }),
    ),
  );
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res, next) => {
    resOf.track(req.headers, res);
    next();
  });
  app.use(jsonRpcHandler({ requestHandler: inner, userBuilder: async () => ANONYMOUS, legacyCompat: { enabled: true } }));
  const sdk = await listen(http.createServer(app));
  return { ours, sdk, machine, counter };
}

export interface Raw {
  status: number;
  /** Header names and values as sent, in order, without Date. */
  headers: string[];
  body: string;
}

/** A JSON POST, its answer as sent: status, headers in order (without Date), the body's text. */
export function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          if (res.rawHeaders[i]!.toLowerCase() !== 'date') h.push(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        }
        resolve({ status: res.statusCode!, headers: h, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

let nextId = 1;
/** A JSON-RPC request's text; `id` defaults to the next of a counter. */
export const call = (method: string, params: unknown, id: unknown = nextId++): string => JSON.stringify({ jsonrpc: '2.0', id, method, params });
