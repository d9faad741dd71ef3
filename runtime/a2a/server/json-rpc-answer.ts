/**
 * A JSON-RPC call handed to the SDK and its answer written: what the SDK's express
 * `jsonRpcHandler` does after its body parser (node_modules/@a2a-js/sdk/dist/server/express,
 * `function jsonRpcHandler`), over plain `node:http` for json-rpc.ts. The protocol is the SDK's
 * exported pieces — the 1.0 `JsonRpcTransportHandler`, the 0.3 `LegacyJsonRpcTransportHandler`,
 * `defaultServerCallContextBuilder`, `Extensions`, `validateVersion`, the SSE framing helpers —
 * and what is written here is only the adapter's glue, line for line in the same order: its
 * choice of handler, the extension headers, the single JSON answer and the SSE loop with its
 * error event. The adapter itself cannot be used without express's app, router, `req.header` and
 * `res.json`, which cost the main thread about a tenth of a task (docs/a2a.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Extensions, SSE_HEADERS, formatSSEErrorEvent, formatSSEEvent, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { type A2ARequestHandler, JsonRpcTransportHandler, defaultServerCallContextBuilder, validateVersion } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { A2A_LEGACY_PROTOCOL_VERSION, LEGACY_HTTP_EXTENSION_HEADER, LEGACY_METHOD_TASKS_RESUBSCRIBE } from '@a2a-js/sdk/compat/v0_3';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import type { Caller } from './auth.ts';
import { sendJson, sendJsonText } from './front-door.ts';
import { AnswerMemo, envelopeText, resultText, sameParts } from './answer-memo.ts';

type RpcError = { code: number; message: string };

/** A header as express's `req.header(name)` reads it (`name` lower-case). */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/**
 * What the snapshot of task `id` is made of now, if the caller of `context` owns it and it is in
 * this process's memory (task-record.ts `snapshotParts`); undefined otherwise.
 */
export type TaskParts = (id: string, context: ServerCallContext) => readonly unknown[] | undefined;

/** A task read (`tasks/get`, `GetTask`) without extensions asked for: one the answer memo may answer. */
function memoKey(body: Record<string, unknown>, useLegacy: boolean, extensions: string | undefined): string | undefined {
  if (body.method !== (useLegacy ? 'tasks/get' : 'GetTask') || extensions !== undefined) return undefined;
  const params = body.params as { id?: unknown; tenant?: unknown } | undefined;
  // A 1.0 read naming a tenant: the SDK sets the call's tenant from it inside its handler, after
  // the parts would be read, so it is always answered by the SDK.
  if (typeof params?.id !== 'string' || params.tenant) return undefined;
  return `${useLegacy ? '0.3' : '1.0'} ${JSON.stringify(params)}`;
}

/**
 * The SDK's JSON-RPC transport handlers of both versions over one request handler. With
 * `taskParts`, task reads of an unchanged task are answered from the answer memo (answer-memo.ts).
 */
export function jsonRpcAnswerer(handler: A2ARequestHandler, taskParts?: TaskParts) {
  const strict = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  const memo = taskParts ? new AnswerMemo() : undefined;
  /** Answers one call (`body`: the checked JSON-RPC request) from `caller` on `res`. */
  return async (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>, caller: Caller): Promise<void> => {
    // The adapter's choice: 0.3 without the header (the front door has written the normalised one).
    const useLegacy = (header(req, 'a2a-version') || A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION;
    const mapToError: (e: unknown) => RpcError = useLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
    // The adapter's `req.body?.id || null`: an id of 0 or '' is answered as null there too.
    const errorBody = (e: unknown) => ({ jsonrpc: '2.0', id: body.id || null, error: mapToError(e) });
    try {
      const requestedVersion = header(req, 'a2a-version') || undefined;
      const extensions = useLegacy ? (header(req, 'x-a2a-extensions') ?? header(req, 'a2a-extensions')) : header(req, 'a2a-extensions');
      const context = defaultServerCallContextBuilder({
        extensions: Extensions.parseServiceParameter(extensions),
        user: caller,
        headers: req.headers,
        ...(requestedVersion !== undefined ? { requestedVersion } : {}),
      });
      validateVersion(context.requestedVersion, await handler.getAgentCard(), 'JSONRPC');
      const key = memo && memoKey(body, useLegacy, extensions);
      const id = key && (body.params as { id: string }).id;
      const before = id ? taskParts!(id, context) : undefined;
      const kept = before && memo!.get(key!, before);
      if (kept !== undefined) {
        // The id as the SDK answers it: the request's, null when it has none.
        sendJsonText(res, 200, envelopeText(body.id ?? null, kept));
        return;
      }
      const out = await (useLegacy ? legacy : strict).handle(body, context);
      if (context.activatedExtensions) {
        res.setHeader(useLegacy ? LEGACY_HTTP_EXTENSION_HEADER : HTTP_EXTENSION_HEADER, Array.from(context.activatedExtensions));
      }
      if (typeof (out as Partial<AsyncIterable<unknown>>)?.[Symbol.asyncIterator] === 'function') {
        const stream = out as AsyncGenerator<unknown, void, undefined>;
        if (useLegacy && body.method === LEGACY_METHOD_TASKS_RESUBSCRIBE) await streamAtOnce(res, stream, body, errorBody);
        else await streamAfterFirst(res, stream, body, errorBody);
      } else if (before && !context.activatedExtensions) {
        // Kept only when the task did not change while the SDK answered (its snapshot is taken
        // inside the call): the parts after are the parts before.
        const text = JSON.stringify(out);
        const result = resultText(out as Record<string, unknown>, text);
        const after = taskParts!(id!, context);
        if (result !== undefined && after && sameParts(before, after)) memo!.set(key!, before, result);
        sendJsonText(res, 200, text);
      } else {
        sendJson(res, 200, out);
      }
    } catch (error) {
      console.error('Unhandled error in JSON-RPC POST handler:', error);
      const answer = errorBody(error);
      if (!res.headersSent) sendJson(res, answer.error.code === A2A_ERROR_CODE.INTERNAL_ERROR ? 500 : 200, answer);
      else if (!res.writableEnded) res.end();
    }
  };
}

function startSse(res: ServerResponse): void {
  for (const [k, v] of Object.entries(SSE_HEADERS)) res.setHeader(k, v);
  res.flushHeaders();
}

type ErrorBody = (e: unknown) => { jsonrpc: string; id: unknown; error: RpcError };

/** 0.3 `tasks/resubscribe`: SSE from the start, every error an SSE error event (the adapter's `alwaysStreamSse`). */
async function streamAtOnce(res: ServerResponse, stream: AsyncGenerator<unknown>, body: Record<string, unknown>, errorBody: ErrorBody): Promise<void> {
  startSse(res);
  try {
    for await (const event of stream) res.write(formatSSEEvent(event));
  } catch (streamError) {
    console.error(`Error during SSE streaming (request ${body.id}):`, streamError);
    if (!res.writableEnded) res.write(formatSSEErrorEvent(errorBody(streamError)));
  } finally {
    if (!res.writableEnded) res.end();
  }
}

/**
 * Every other stream: its first event is awaited before the SSE headers, so an error before it is
 * a plain JSON-RPC answer; a later one is an SSE error event.
 */
async function streamAfterFirst(res: ServerResponse, stream: AsyncGenerator<unknown>, body: Record<string, unknown>, errorBody: ErrorBody): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  let first: IteratorResult<unknown>;
  try {
    first = await iterator.next();
  } catch (streamError) {
    console.error(`Pre-stream error for request ${body.id}:`, streamError);
    sendJson(res, 200, errorBody(streamError));
    return;
  }
  startSse(res);
  try {
    if (!first.done) res.write(formatSSEEvent(first.value));
    for await (const event of rest(iterator)) res.write(formatSSEEvent(event));
  } catch (streamError) {
    console.error(`Error during SSE streaming (request ${body.id}):`, streamError);
    const answer = errorBody(streamError);
    if (!res.headersSent) sendJson(res, 500, answer);
    else res.write(formatSSEErrorEvent(answer));
  } finally {
    if (!res.writableEnded) res.end();
  }
}

/**
 * The rest of an iterator whose first item was taken, closed with `return()` when the loop over it
 * stops early (the SDK's internal `delegateAsyncIterator`, not exported: same rule, same order).
 */
async function* rest<T>(it: AsyncIterator<T>): AsyncGenerator<T, void, undefined> {
  let nextThrew = false;
  try {
    while (true) {
      let result: IteratorResult<T>;
      try {
        result = await it.next();
      } catch (err) {
        nextThrew = true;
        throw err;
      }
      if (result.done) return;
      yield result.value;
    }
  } finally {
    if (!nextThrew) await it.return?.();
  }
}
