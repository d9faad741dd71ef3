/**
 * The JSON-RPC front door, before the SDK's handler: reads the body under a size limit, parses it,
 * and checks the envelope, the `A2A-Version` and the method, answering each refusal with a
 * JSON-RPC error whose message says what to fix. The SDK's own checks answer an oversized body
 * with express's HTML error page, say only "Invalid JSON-RPC Request." / "Invalid method.", need
 * the exact version strings and log a stack per refusal (docs/a2a.md).
 */
import type http from 'node:http';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { ContentTypeNotSupportedError, RequestMalformedError, toRestErrorBody } from '@a2a-js/sdk/errors';
import { AuthError, type Authenticator, type Caller } from './auth.ts';
import { METHODS_0_3, METHODS_1_0, VERSION_HEADER, normaliseVersion } from '../core/wire.ts';

function errMessage(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

export function rpcErrorBody(id: unknown, code: number, message: string): Record<string, unknown> {
  const okId = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
  return { jsonrpc: '2.0', id: okId, error: { code, message } };
}

const M03 = 'message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe';
const M10 = 'SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask';

/** Methods that start a new task (a message without a taskId); refused while the server drains. */
const NEW_TASK_METHODS = new Set(['message/send', 'message/stream', 'SendMessage', 'SendStreamingMessage']);

export function frontDoor(maxBody: number, resOf: WeakMap<object, http.ServerResponse>, draining: () => boolean = () => false) {
  return (req: Request, res: Response, next: NextFunction) => {
    const reply = (status: number, body: Record<string, unknown>, close = false) => {
      if (res.headersSent) return;
      if (close) res.setHeader('Connection', 'close');
      res.status(status).json(body);
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBody) {
      reply(413, rpcErrorBody(null, -32600, `request body of ${declared} bytes exceeds the ${maxBody}-byte limit`), true);
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let aborted = false;
    req.on('data', (c: Buffer) => {
      if (aborted) return;
      size += c.length;
      if (size > maxBody) {
        aborted = true;
        chunks.length = 0;
        reply(413, rpcErrorBody(null, -32600, `request body exceeds the ${maxBody}-byte limit`), true);
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('error', () => {
      aborted = true;
    });
    req.on('end', () => {
      if (aborted) return;
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        if (raw.trim() === '') throw new Error('empty request body');
        body = JSON.parse(raw);
      } catch (e) {
        reply(200, rpcErrorBody(null, -32700, `parse error: request body is not valid JSON (${errMessage(e)})`));
        return;
      }
      if (tooDeep(body, MAX_JSON_DEPTH)) {
        reply(200, rpcErrorBody(null, -32600, `invalid request: JSON nests deeper than ${MAX_JSON_DEPTH} levels`));
        return;
      }
      const problem = checkEnvelope(body, req);
      if (problem) {
        reply(200, rpcErrorBody(problem.id, problem.code, problem.message));
        return;
      }
      if (!('id' in (body as object))) {
        // A JSON-RPC notification asks for no answer, and A2A has no method whose effect a caller
        // could want without its answer (a message/send nobody hears of would run a task nobody
        // follows): it is not run, and the HTTP reply carries no body.
        res.status(204).end();
        return;
      }
      // Draining (SIGTERM): a new task is refused with 503 + Retry-After, the retryable answer a
      // client or proxy knows; a reply to a task already here still goes through.
      const b = body as { method?: unknown; params?: { message?: { taskId?: unknown } } };
      if (draining() && typeof b.method === 'string' && NEW_TASK_METHODS.has(b.method) && !b.params?.message?.taskId) {
        res.setHeader('Retry-After', '1');
        reply(
          503,
          rpcErrorBody(
            (body as { id?: unknown }).id,
            -32603,
            'server is shutting down (draining after SIGTERM): retry the request, another replica will take it',
          ),
        );
        return;
      }
      req.body = body;
      resOf.set(req.headers, res);
      next();
    });
  };
}

const MAX_JSON_DEPTH = 64;

/** Whether a parsed JSON value nests deeper than `max` (iterative: no recursion on hostile input). */
function tooDeep(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d >= max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
    }
  }
  return false;
}

function checkEnvelope(body: unknown, req: Request): { id: unknown; code: number; message: string } | undefined {
  if (Array.isArray(body)) {
    return { id: null, code: -32600, message: 'invalid request: batch requests are not supported; send one JSON-RPC object per POST' };
  }
  if (typeof body !== 'object' || body === null) {
    return { id: null, code: -32600, message: 'invalid request: the body must be a JSON-RPC 2.0 request object' };
  }
  const b = body as Record<string, unknown>;
  const id = b.id;
  if ('id' in b && !(typeof id === 'string' || id === null || (typeof id === 'number' && Number.isInteger(id)))) {
    return { id: null, code: -32600, message: "invalid request: 'id' must be a string, an integer or null" };
  }
  if (b.jsonrpc !== '2.0') {
    return { id, code: -32600, message: `invalid request: 'jsonrpc' must be "2.0"` };
  }
  const method = b.method;
  if (typeof method !== 'string' || method === '') {
    return { id, code: -32600, message: "invalid request: 'method' must be a non-empty string" };
  }
  const rawVersion = requestedVersion(req);
  const version = normaliseVersion(rawVersion);
  if (!version) {
    return { id, code: -32009, message: `A2A-Version '${rawVersion}' is not supported; this server speaks 0.3 (no header) and 1.0` };
  }
  // The SDK reads only the header and needs its exact spelling: hand it the normalised version.
  if (rawVersion !== undefined) req.headers['a2a-version'] = version;
  const table = version === '1.0' ? METHODS_1_0 : METHODS_0_3;
  if (!table.has(method)) {
    let message = `method not found: '${method}'`;
    if (version === '0.3' && METHODS_1_0.has(method)) {
      message += ` is an A2A 1.0 name; send the header 'A2A-Version: 1.0' (without it this server speaks A2A 0.3: ${M03})`;
    } else if (version === '1.0' && METHODS_0_3.has(method)) {
      message += ` is an A2A 0.3 name; under 'A2A-Version: 1.0' use ${M10}`;
    } else {
      message += `; A2A ${version} methods here: ${version === '1.0' ? M10 : M03}`;
    }
    return { id, code: -32601, message };
  }
  const params = b.params;
  const noParams = method === 'agent/getAuthenticatedExtendedCard' || method === 'GetExtendedAgentCard';
  if (!noParams && (typeof params !== 'object' || params === null || Array.isArray(params))) {
    return { id, code: -32602, message: `invalid params: '${method}' needs 'params' to be an object` };
  }
  if (
    (method === 'message/send' || method === 'message/stream' || method === 'SendMessage' || method === 'SendStreamingMessage') &&
    (typeof (params as Record<string, unknown>).message !== 'object' || (params as Record<string, unknown>).message === null)
  ) {
    return { id, code: -32602, message: `invalid params: '${method}' needs params.message (an A2A Message object)` };
  }
  const msgProblem =
    (params as Record<string, unknown> | undefined)?.message !== undefined ? rawMessageProblem((params as Record<string, unknown>).message) : undefined;
  if (msgProblem) return { id, code: -32602, message: `invalid params: ${msgProblem}` };
  const idParam = (params as Record<string, unknown> | undefined)?.id;
  if (
    ['tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'GetTask', 'CancelTask', 'SubscribeToTask'].includes(method) &&
    (typeof idParam !== 'string' || idParam === '')
  ) {
    return { id, code: -32602, message: `invalid params: '${method}' needs params.id (the task id, a string)` };
  }
  return undefined;
}

/**
 * The A2A version a request asks for: the `A2A-Version` header, else the `A2A-Version` query
 * parameter (A2A 1.0 §3.6 allows either); undefined when neither is present (= 0.3).
 */
export function requestedVersion(req: Request): string | undefined {
  const h = req.header(VERSION_HEADER);
  if (h !== undefined) return h;
  const q = new URL(req.originalUrl ?? req.url, 'http://x').searchParams.get(VERSION_HEADER);
  return q ?? undefined;
}

const ID_FIELDS = ['messageId', 'contextId', 'taskId'] as const;

/**
 * What is wrong with a raw (wire JSON) message that the SDK's decoder would silently coerce:
 * non-string ids and non-string `text` parts (the decoder turns an object into "[object Object]").
 * Both wire shapes: 0.3 `{kind: 'text', text}` and 1.0 `{text}`. Undefined when fine.
 */
export function rawMessageProblem(m: unknown): string | undefined {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return 'message must be an object';
  const msg = m as Record<string, unknown>;
  for (const f of ID_FIELDS) {
    if (f in msg && msg[f] !== null && typeof msg[f] !== 'string') return `message.${f} must be a string, got ${jsonType(msg[f])}`;
  }
  const parts = msg.parts;
  if (parts !== undefined && !Array.isArray(parts)) return `message.parts must be an array, got ${jsonType(parts)}`;
  for (const [i, p] of (parts ?? []).entries()) {
    if (typeof p !== 'object' || p === null || Array.isArray(p)) return `message.parts[${i}] must be an object, got ${jsonType(p)}`;
    const part = p as Record<string, unknown>;
    if ('text' in part && typeof part.text !== 'string') return `message.parts[${i}].text must be a string, got ${jsonType(part.text)}`;
  }
  return undefined;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

const REST_TYPES = ['application/json', 'application/a2a+json'];

/** What is wrong with a path whose percent-escapes do not decode (the SDK's router would throw a 500). */
export function badPathEscape(path: string): string | undefined {
  for (const seg of path.split('/')) {
    try {
      decodeURIComponent(seg);
    } catch {
      const at = /%(?![0-9a-fA-F]{2})/.exec(seg)?.index;
      const what = at !== undefined ? `'${seg.slice(at, at + 3)}' is not a percent-escape` : `the bytes of '${seg.slice(0, 80)}' are not UTF-8`;
      return `path '${path.slice(0, 200)}' does not decode: ${what} (write a byte as %XX with two hex digits, text as UTF-8) [E-A2A-043]`;
    }
  }
  return undefined;
}

/** A REST error body (the SDK's shape: `{error: {code, status, message, details}}`) with its status. */
export function restFail(res: Response, status: number, error: Error): void {
  res.setHeader('Content-Type', 'application/a2a+json');
  res.status(status).json(toRestErrorBody(error, status));
}

/**
 * The HTTP+JSON front door, before the SDK's `restHandler`: the same body limit as JSON-RPC
 * (the SDK's own `express.json()` stops at 100 KB), the `A2A-Version` query parameter, and the
 * raw-message checks the SDK's decoder would skip. Errors are the SDK's REST error bodies. Two
 * answers differ from the SDK's, to follow A2A 1.0's HTTP mapping: an unsupported Content-Type
 * is 415 (the SDK says 400), and a path whose percent-escapes do not decode is 400 (the SDK's
 * router throws, which reached express's error handler as a 500).
 */
export function restDoor(maxBody: number, resOf: WeakMap<object, http.ServerResponse>) {
  const parse = express.json({ limit: maxBody, type: REST_TYPES, strict: false });
  return (req: Request, res: Response, next: NextFunction) => {
    const fail = (status: number, message: string) => restFail(res, status, new RequestMalformedError(message));
    const badPath = badPathEscape(req.originalUrl.split('?', 1)[0]!);
    if (badPath) {
      req.resume();
      return fail(400, badPath);
    }
    const rawType = req.header('content-type');
    if (rawType !== undefined && !REST_TYPES.includes(rawType.split(';', 1)[0]!.trim().toLowerCase())) {
      req.resume();
      const message = `Content-Type '${rawType.slice(0, 100)}' is not supported: send the body as application/json or application/a2a+json [E-A2A-044]`;
      return restFail(res, 415, new ContentTypeNotSupportedError(message));
    }
    const v = requestedVersion(req);
    const version = normaliseVersion(v);
    if (v !== undefined && version) req.headers['a2a-version'] = version;
    parse(req, res, (err?: unknown) => {
      if (err) {
        const e = err as { status?: number; type?: string; message?: string };
        if (e.type === 'entity.too.large') fail(413, `request body exceeds the ${maxBody}-byte limit`);
        else fail(400, `request body is not valid JSON (${e.message ?? 'parse error'})`);
        return;
      }
      const body = req.body as Record<string, unknown> | undefined;
      if (body && typeof body === 'object' && 'message' in body) {
        const problem = rawMessageProblem(body.message);
        if (problem) {
          fail(400, problem);
          return;
        }
      }
      resOf.set(req.headers, res);
      next();
    });
  };
}

/**
 * Errors thrown under /rest that the SDK's REST handler did not answer itself (its router's own,
 * express's): answered in the REST binding's shape, never the JSON-RPC one. A client error keeps
 * its status (400 for what the router could not read); anything else is a 500 without detail.
 */
export function restErrors() {
  return (err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return restFail(res, status, new RequestMalformedError(errMessage(err)));
    }
    restFail(res, 500, new Error('internal error'));
  };
}

/**
 * Authentication before anything else reads the request: the caller is found (or the request is
 * refused with 401 and `WWW-Authenticate: Bearer`) and remembered for the SDK's user builder.
 * The refusal never says more than "required" or "invalid", and never echoes the credential.
 */
export function authDoor(auth: Authenticator, callers: WeakMap<object, Caller>, binding: 'jsonrpc' | 'rest') {
  return (req: Request, res: Response, next: NextFunction) => {
    auth.authenticate(req.headers).then(
      (caller) => {
        callers.set(req, caller);
        next();
      },
      (e: unknown) => {
        const message = e instanceof AuthError ? e.message : 'invalid credentials';
        res.setHeader('WWW-Authenticate', 'Bearer realm="a2a"');
        res.setHeader('Connection', 'close');
        if (binding === 'rest') {
          res.status(401).json({ error: { code: 401, status: 'UNAUTHENTICATED', message } });
        } else {
          res.status(401).json(rpcErrorBody(null, -32600, message));
        }
        req.resume();
      },
    );
  };
}
