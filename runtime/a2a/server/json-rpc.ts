/**
 * The JSON-RPC binding at `POST /` over plain `node:http`, without express: the A2A server's
 * request listener (server.ts) hands such requests here and everything else to the express app
 * (routes.ts). Each request runs, in order, what the express chain ran: authentication (401 and
 * the connection closed for a refused caller), the activity hold from arrival until the response
 * closes, the front door (front-door.ts: body limit, JSON, depth, envelope, version, methods,
 * notifications, the drain), the SDK adapter's Content-Type guard, then the SDK's transport
 * handler and the answer (json-rpc-answer.ts). express's app and router cost the main thread
 * about a tenth of a task and make garbage on every call (docs/a2a.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import type { Activity } from '../../telemetry/activity.ts';
import type { Authenticator, Caller } from './auth.ts';
import { authenticate, checkRpcBody, holdAwake, internalErrorBody, readRpcBody, refuse, sendJson } from './front-door.ts';
import { jsonRpcAnswerer, type TaskParts } from './json-rpc-answer.ts';
import type { ResponseOf } from './response-of.ts';
import { STREAMING_METHODS } from '../core/wire.ts';

export interface JsonRpcDeps {
  handler: A2ARequestHandler;
  auth: Authenticator;
  /** Request headers object → its response, for a stream subscriber's backpressure (the handler's `sinkOf`). */
  resOf: ResponseOf;
  maxBody: number;
  /** Whether the server drains (new tasks refused with 503). */
  draining: () => boolean;
  /** Told of each authenticated request from its arrival until its response closes. */
  activity?: Activity;
  /** Task reads of an unchanged task answered from the answer memo (json-rpc-answer.ts); none without. */
  taskParts?: TaskParts;
}

/**
 * Whether a request is for the JSON-RPC binding: `POST` to the path `/`, any query (the
 * `A2A-Version` parameter), as express's `app.post('/')` matched it — an absolute-form target
 * (`POST http://host/`) included.
 */
export function isJsonRpcRequest(req: IncomingMessage): boolean {
  if (req.method !== 'POST') return false;
  const url = req.url ?? '';
  if (url[0] !== '/') return absolutePath(url) === '/';
  const q = url.indexOf('?');
  return (q < 0 ? url.length : q) === 1;
}

function absolutePath(url: string): string | undefined {
  try {
    return new URL(url).pathname;
  } catch {
    return undefined;
  }
}

/** The SDK adapter's `contentTypeGuard` (it ran after the front door): a body declared other than JSON is refused. */
function contentTypeRefusal(req: IncomingMessage): Record<string, unknown> | undefined {
  const raw = req.headers['content-type'];
  if (!raw || raw.split(';', 1)[0]!.trim().toLowerCase() === 'application/json') return undefined;
  const e = new ContentTypeNotSupportedError(`Unsupported Content-Type "${raw}"; expected application/json.`);
  return { jsonrpc: '2.0', id: null, error: JsonRpcTransportHandler.mapToJSONRPCError(e) };
}

/** The request listener of the JSON-RPC binding. */
export function jsonRpcTransport(d: JsonRpcDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const answer = jsonRpcAnswerer(d.handler, d.taskParts);
  const call = (req: IncomingMessage, res: ServerResponse, caller: Caller, raw: string): void => {
    const checked = checkRpcBody(raw, req.headers, req.url ?? '/', d.draining);
    if (checked.kind === 'refuse') {
      refuse(res, checked.refusal);
      return;
    }
    if (checked.kind === 'notification') {
      res.statusCode = 204;
      res.end();
      return;
    }
    const wrongType = contentTypeRefusal(req);
    if (wrongType) {
      sendJson(res, 200, wrongType);
      return;
    }
    // Only a stream's subscriber looks its response up; tracking every call cost each one a
    // listener (response-of.ts says why entries are not left to the WeakMap).
    if (STREAMING_METHODS.has(checked.body.method as string)) d.resOf.track(req.headers, res);
    answer(req, res, checked.body, caller).catch((e: unknown) => internalError(res, e));
  };
  return (req, res) => {
    authenticate(d.auth, req, res, 'jsonrpc')
      .then((caller) => {
        if (!caller) return;
        holdAwake(d.activity, res);
        readRpcBody(req, res, d.maxBody, (raw) => {
          try {
            call(req, res, caller, raw);
          } catch (e) {
            internalError(res, e);
          }
        });
      })
      .catch((e: unknown) => internalError(res, e));
  };
}

/** What express's last-resort handler (routes.ts) answered for an error nothing else caught. */
function internalError(res: ServerResponse, e: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, 500, internalErrorBody(e));
}
