/**
 * Bad input that got through (issue 38 §5, the A2A part), over real HTTP and a real gRPC channel:
 * a REST path whose percent-escapes do not decode is a 400 in the REST binding's shape (it was a
 * 500 with a JSON-RPC body), a REST body of another Content-Type is 415 and an unsupported
 * `A2A-Version` on gRPC is UNIMPLEMENTED (A2A 1.0's mapping; the SDK says 400 and
 * FAILED_PRECONDITION), and random REST requests never get a 5xx.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { fromGrpcError } from '@a2a-js/sdk/errors/grpc';
import type { A2AServer } from '../../runtime/a2a/server/server.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { closeAll, msg10, serve } from './helpers.ts';

afterAll(closeAll);

const echo: TaskExecutor = async (ctx) => ({ state: 'completed', text: ctx.text });

let shared: A2AServer | undefined;
const server = async () => (shared ??= await serve(echo, { grpcPort: 0, push: { allow: ['127.0.0.1'] } }));

async function rest(s: A2AServer, path: string, init: RequestInit = {}) {
  const r = await fetch(`${s.restUrl}${path}`, { ...init, headers: { 'A2A-Version': '1.0', ...(init.headers as Record<string, string>) } });
  const text = await r.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: r.status, type: r.headers.get('content-type') ?? '', body };
}

async function newTask(s: A2AServer): Promise<string> {
  const r = await rest(s, '/message:send', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: msg10('hi') }) });
  expect(r.status).toBe(200);
  return r.body.task.id;
}

describe('REST paths with bad percent-escapes', () => {
  it('are a 400 in the REST error shape naming the path, not a 500 with a JSON-RPC body', async () => {
    const s = await server();
    const task = await newTask(s);
    for (const path of ['/tasks/%zz', '/tasks/%c0%ae', `/tasks/${task}/pushNotificationConfigs/%ff`, '/tasks/%zz:cancel', '/tasks/ab%']) {
      const method = path.endsWith(':cancel') ? 'POST' : 'GET';
      const r = await rest(s, path, { method });
      expect(r.status, path).toBe(400);
      expect(r.type, path).toContain('application/a2a+json');
      expect(r.body.jsonrpc, path).toBeUndefined();
      expect(r.body.error, path).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(r.body.error.message, path).toContain(`/rest${path}`);
      expect(r.body.error.message, path).toContain('[E-A2A-043]');
    }
    // A well-formed escape still reaches the handler (an unknown task: 404).
    expect((await rest(s, '/tasks/%41bc')).status).toBe(404);
  });

  it('survive 600 random REST requests without a 5xx, every error in the REST shape', async () => {
    const s = await server();
    const task = await newTask(s);
    let seed = 7;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
    const bits = ['%zz', '%', '%c0%ae', '%ff', '%e2%82', '%00', '%2F', 'a', task, '..', '%25', '~', ':cancel', ':subscribe', '💥'];
    const shapes = [
      '/tasks/{}',
      '/tasks/{}:cancel',
      '/tasks/{}/pushNotificationConfigs',
      '/tasks/{}/pushNotificationConfigs/{}',
      '/{}/tasks/{}',
      '/message:send',
      '/tasks',
    ];
    const bad: string[] = [];
    for (let i = 0; i < 600; i++) {
      const path = pick(shapes).replace(/\{\}/g, () => Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(bits)).join(''));
      const method = pick(['GET', 'POST', 'DELETE']);
      const init: RequestInit = { method };
      if (method === 'POST') {
        init.headers = { 'content-type': pick(['application/json', 'application/a2a+json', 'text/plain']) };
        init.body = pick(['{}', `{"message":${JSON.stringify(msg10('x'))}}`, '{"url":"http://127.0.0.1/h"}', '[', '"str"', '{"message":{"parts":5}}']);
      }
      const res = await rest(s, encodeURI(path).replace(/%25/g, '%'), init);
      if (res.status >= 500) bad.push(`${method} ${path}: ${res.status}`);
      else if (res.status >= 400 && res.status !== 404 && !(res.body?.error?.status && typeof res.body.error.message === 'string'))
        bad.push(`${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 100)}`);
    }
    expect(bad).toEqual([]);
  });
});

describe('REST Content-Type', () => {
  it('a body of another Content-Type is 415 ContentTypeNotSupported (A2A 1.0), not 400', async () => {
    const s = await server();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml; charset=utf-8']) {
      const r = await rest(s, '/message:send', { method: 'POST', headers: { 'content-type': type }, body: JSON.stringify({ message: msg10('hi') }) });
      expect(r.status, type).toBe(415);
      expect(r.body.error.message, type).toContain(`Content-Type '${type}' is not supported`);
      expect(r.body.error.message, type).toContain('[E-A2A-044]');
      expect(r.body.error.details[0].reason, type).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    }
    // Both JSON types still work, parameters included.
    for (const type of ['application/json; charset=utf-8', 'application/a2a+json']) {
      const r = await rest(s, '/message:send', { method: 'POST', headers: { 'content-type': type }, body: JSON.stringify({ message: msg10('hi') }) });
      expect(r.status, type).toBe(200);
    }
  });
});

describe('gRPC A2A-Version', () => {
  const Client = grpc.makeGenericClientConstructor(A2AService as unknown as grpc.ServiceDefinition, 'A2AService');

  function getTask(address: string, version: string | undefined): Promise<grpc.ServiceError | undefined> {
    const client = new Client(address, grpc.credentials.createInsecure()) as unknown as {
      getTask(req: object, md: grpc.Metadata, cb: (e: grpc.ServiceError | null) => void): void;
      close(): void;
    };
    const md = new grpc.Metadata();
    if (version !== undefined) md.set('a2a-version', version);
    return new Promise((resolve) =>
      client.getTask({ id: 'no-such-task', tenant: '' }, md, (e) => {
        client.close();
        resolve(e ?? undefined);
      }),
    );
  }

  it('an unsupported version is UNIMPLEMENTED (A2A 1.0), with the VersionNotSupported details', async () => {
    const s = await server();
    for (const v of ['2.0', '0.2', 'abc', '0.3', undefined]) {
      const e = await getTask(s.grpcAddress!, v);
      expect(e?.code, String(v)).toBe(grpc.status.UNIMPLEMENTED);
      expect(e?.details, String(v)).toContain('[E-A2A-045]');
      // The SDK's own client reads the details back as its VersionNotSupportedError.
      expect(fromGrpcError(e!, 'GetTask').name, String(v)).toBe('VersionNotSupportedError');
    }
  });

  it('a supported version in any spelling reaches the handler (an unknown task: NOT_FOUND)', async () => {
    const s = await server();
    for (const v of ['1.0', '1', '1.0.1']) {
      expect((await getTask(s.grpcAddress!, v))?.code, v).toBe(grpc.status.NOT_FOUND);
    }
  });
});
