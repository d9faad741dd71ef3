/**
 * What stands before the SDK's handlers, the rules of both HTTP bindings in one place:
 * authentication and the activity hold (`authenticate`, `holdAwake`); the JSON-RPC front door,
 * which json-rpc.ts runs: reads the body under a size limit, parses it, and checks the envelope,
 * the `A2A-Version` and the method, answering each refusal with a JSON-RPC error whose message
 * says what to fix (the SDK's own checks answer an oversized body with express's HTML error page,
 * say only "Invalid JSON-RPC Request." / "Invalid method.", need the exact version strings and
 * log a stack per refusal: docs/a2a.md); and the HTTP+JSON door (`restDoor`).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { ContentTypeNotSupportedError, RequestMalformedError, toRestErrorBody } from '@a2a-js/sdk/errors';
import { AuthError, type Authenticator, type Caller } from './auth.ts';
import { METHODS_0_3, METHODS_1_0, VERSION_HEADER, normaliseVersion } from '../core/wire.ts';
import type { Activity } from '../../telemetry/activity.ts';
import { errMessage } from '../../errors.ts';
import type { ResponseOf } from './response-of.ts';

export function rpcErrorBody(id: unknown, code: number, message: string): Record<string, unknown> {
  const okId = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
  return { jsonrpc: '2.0', id: okId, error: { code, message } };
}

/** The JSON-RPC answer to an error nothing else caught (a 500), on either transport. */
export function internalErrorBody(e: unknown): Record<string, unknown> {
  return rpcErrorBody(null, -32603, `internal error: ${errMessage(e)}`);
}

const M03 = 'message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe';
const M10 = 'SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask';

/** The methods that carry a message (params.message required): a new task when it names no taskId, refused while the server drains. */
const NEW_TASK_METHODS = new Set(['message/send', 'message/stream', 'SendMessage', 'SendStreamingMessage']);

/** The methods that name an existing task (params.id required, a non-empty string). */
const TASK_ID_METHODS = new Set(['tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'GetTask', 'CancelTask', 'SubscribeToTask']);

/** A request the JSON-RPC front door answers itself instead of passing it on. */
export interface Refusal {
  status: number;
  body: Record<string, unknown>;
  /** Close the connection after the answer (a body too large to read on). */
  close?: boolean;
  /** Seconds a client should wait before retrying (the drain's 503). */
  retryAfter?: string;
}

/** What the front door made of a JSON-RPC request's body. */
export type RpcCheck = { kind: 'refuse'; refusal: Refusal } | { kind: 'notification' } | { kind: 'call'; body: Record<string, unknown> };

/**
 * express's `res.json(body)` with the app's settings here (no replacer, no spaces, no escaping, no
 * ETag), without express: the same status line, headers and bytes, so the JSON-RPC transport
 * (json-rpc.ts) answers exactly as the express routes did.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonText(res, status, JSON.stringify(body) as string | undefined);
}

/** `sendJson` of a body already stringified (`undefined`: no body, as express sends `res.json(undefined)`). */
export function sendJsonText(res: ServerResponse, status: number, json: string | undefined): void {
  res.statusCode = status;
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  if (json === undefined) {
    res.end();
    return;
  }
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

/** Answers a refusal, unless an answer has already begun. */
export function refuse(res: ServerResponse, r: Refusal): void {
  if (res.headersSent) return;
  if (r.close) res.setHeader('Connection', 'close');
  if (r.retryAfter !== undefined) res.setHeader('Retry-After', r.retryAfter);
  sendJson(res, r.status, r.body);
}

function tooLarge(message: string): Refusal {
  return { status: 413, body: rpcErrorBody(null, -32600, message), close: true };
}

/**
 * Reads a JSON-RPC request's body under the size limit and hands `done` its text (decoded once,
 * whole, so a character split between chunks stays whole). A body declared or found larger than
 * `maxBody` is answered 413 with the connection closed, the rest of it discarded, and `done` is
 * never called; nor is it for a request whose connection fails.
 */
export function readRpcBody(req: IncomingMessage, res: ServerResponse, maxBody: number, done: (raw: string) => void): void {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBody) {
    refuse(res, tooLarge(`request body of ${declared} bytes exceeds the ${maxBody}-byte limit`));
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
      refuse(res, tooLarge(`request body exceeds the ${maxBody}-byte limit`));
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
    done(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8'));
  });
}

/**
 * The front door's checks of a JSON-RPC request, in order: JSON, depth, envelope, version and
 * method (checkEnvelope; it writes the normalised version into `headers` for the SDK), then
 * notifications and the drain. `url` is the request target, for the `A2A-Version` query form.
 */
export function checkRpcBody(raw: string, headers: IncomingHttpHeaders, url: string, draining: () => boolean): RpcCheck {
  const refusal = (status: number, id: unknown, code: number, message: string): RpcCheck => ({
    kind: 'refuse',
    refusal: { status, body: rpcErrorBody(id, code, message) },
  });
  let body: unknown;
  try {
    if (raw.trim() === '') throw new Error('empty request body');
    body = JSON.parse(raw);
  } catch (e) {
    return refusal(200, null, -32700, `parse error: request body is not valid JSON (${errMessage(e)})`);
  }
  if (tooDeep(body, MAX_JSON_DEPTH)) {
    return refusal(200, null, -32600, `invalid request: JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const problem = checkEnvelope(body, headers, url);
  if (problem) return refusal(200, problem.id, problem.code, problem.message);
  const b = body as Record<string, unknown> & { params?: { message?: { taskId?: unknown } } };
  // A JSON-RPC notification asks for no answer, and A2A has no method whose effect a caller
  // could want without its answer (a message/send nobody hears of would run a task nobody
  // follows): it is not run, and the HTTP reply carries no body.
  if (!('id' in b)) return { kind: 'notification' };
  // Draining (SIGTERM): a new task is refused with 503 + Retry-After, the retryable answer a
  // client or proxy knows; a reply to a task already here still goes through.
  if (typeof b.method === 'string' && NEW_TASK_METHODS.has(b.method) && !b.params?.message?.taskId && draining()) {
    const message = 'server is shutting down (draining after SIGTERM): retry the request, another replica will take it';
    return { kind: 'refuse', refusal: { status: 503, body: rpcErrorBody(b.id, -32603, message), retryAfter: '1' } };
  }
  return { kind: 'call', body: b };
}

const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests deeper than `max`: a container at depth `max` (the root is at
 * 0). Recursive, but never more than `max` + 1 calls deep, so a hostile body stops the walk there,
 * not at the stack's end. Why not an explicit stack of (value, depth) pairs as before: it copied
 * every object's values into an array and made a pair per container, ≈ 5 KB of garbage a task on
 * `mur serve` (a sampling heap profile, issue 42), on every request whatever its size.
 */
function tooDeep(v: unknown, max: number, d = 0): boolean {
  if (typeof v !== 'object' || v === null) return false;
  if (d >= max) return true;
  if (Array.isArray(v)) {
    for (const child of v) if (tooDeep(child, max, d + 1)) return true;
    return false;
  }
  for (const k in v) if (Object.hasOwn(v, k) && tooDeep((v as Record<string, unknown>)[k], max, d + 1)) return true;
  return false;
}

function checkEnvelope(body: unknown, headers: IncomingHttpHeaders, url: string): { id: unknown; code: number; message: string } | undefined {
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
  const rawVersion = requestedVersion(headers, url);
  const version = normaliseVersion(rawVersion);
  if (!version) {
    return { id, code: -32009, message: `A2A-Version '${rawVersion}' is not supported; this server speaks 0.3 (no header) and 1.0` };
  }
  // The SDK reads only the header and needs its exact spelling: hand it the normalised version.
  if (rawVersion !== undefined) headers['a2a-version'] = version;
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
    NEW_TASK_METHODS.has(method) &&
    (typeof (params as Record<string, unknown>).message !== 'object' || (params as Record<string, unknown>).message === null)
  ) {
    return { id, code: -32602, message: `invalid params: '${method}' needs params.message (an A2A Message object)` };
  }
  const msgProblem =
    (params as Record<string, unknown> | undefined)?.message !== undefined ? rawMessageProblem((params as Record<string, unknown>).message) : undefined;
  if (msgProblem) return { id, code: -32602, message: `invalid params: ${msgProblem}` };
  const idParam = (params as Record<string, unknown> | undefined)?.id;
  if (TASK_ID_METHODS.has(method) && (typeof idParam !== 'string' || idParam === '')) {
    return { id, code: -32602, message: `invalid params: '${method}' needs params.id (the task id, a string)` };
  }
  return undefined;
}

/**
 * The A2A version a request asks for: the `A2A-Version` header, else the `A2A-Version` query
 * parameter (A2A 1.0 §3.6 allows either); undefined when neither is present (= 0.3).
 */
export function requestedVersion(headers: IncomingHttpHeaders, url: string): string | undefined {
  const h = headers['a2a-version'];
  if (typeof h === 'string') return h;
  // No query, no parameter: most requests skip parsing a URL.
  if (!url.includes('?')) return undefined;
  const q = new URL(url, 'http://x').searchParams.get(VERSION_HEADER);
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
export function restDoor(maxBody: number, resOf: ResponseOf) {
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
    const v = requestedVersion(req.headers, req.originalUrl);
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
      resOf.track(req.headers, res);
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
 * Authentication before anything else reads the request: resolves with the caller, or refuses the
 * request with 401, `WWW-Authenticate: Bearer` and the connection closed, and resolves undefined.
 * The refusal never says more than "required" or "invalid", and never echoes the credential.
 */
export function authenticate(auth: Authenticator, req: IncomingMessage, res: ServerResponse, binding: 'jsonrpc' | 'rest'): Promise<Caller | undefined> {
  return auth.authenticate(req.headers).then(
    (caller) => caller,
    (e: unknown) => {
      const message = e instanceof AuthError ? e.message : 'invalid credentials';
      res.setHeader('WWW-Authenticate', 'Bearer realm="a2a"');
      res.setHeader('Connection', 'close');
      sendJson(res, 401, binding === 'rest' ? { error: { code: 401, status: 'UNAUTHENTICATED', message } } : rpcErrorBody(null, -32600, message));
      req.resume();
      return undefined;
    },
  );
}

/** `authenticate` as express middleware (HTTP+JSON): the caller remembered for the SDK's user builder. */
export function authDoor(auth: Authenticator, callers: WeakMap<object, Caller>) {
  return (req: Request, res: Response, next: NextFunction) => {
    authenticate(auth, req, res, 'rest').then((caller) => {
      if (!caller) return;
      callers.set(req, caller);
      next();
    });
  };
}

/**
 * Holds the capsule awake from an authenticated A2A request's arrival until its response closes
 * ('close' comes after the last byte, or when the caller goes away): an SSE stream stays open for
 * as long as it streams. Health, readiness and the card are not A2A requests (probes and the
 * operator's card fetch must not keep a capsule awake), nor are refused callers.
 */
export function holdAwake(activity: Activity | undefined, res: ServerResponse): void {
  if (activity) res.once('close', activity.begin());
}
