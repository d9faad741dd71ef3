/**
 * The activator's refusals and failures, each with its stable code (docs/errors.md), and the shape
 * each binding gives an error in, so a caller's A2A client reads it as it would the capsule's own:
 * JSON-RPC (a POST on `/`) gets a JSON-RPC error object, HTTP+JSON (`/rest/…`) and everything else
 * the REST binding's `{error: {code, status, message}}` (runtime/a2a/server/front-door.ts), gRPC a
 * status in the trailers (http2.ts).
 */
export const CODES = {
  config: 'E-OP-060',
  unknownCapsule: 'E-OP-061',
  refusedByPolicy: 'E-OP-062',
  unauthenticated: 'E-OP-063',
  wakeTimeout: 'E-OP-064',
  bodyTooLarge: 'E-OP-065',
  noCard: 'E-OP-066',
  upstream: 'E-OP-067',
} as const;

/** Why a request was not delivered: the label of `capsule_activator_refusals_total` too. */
export type RefusalReason = 'unknown_capsule' | 'network_policy' | 'unauthenticated' | 'wake_timeout' | 'body_too_large' | 'no_card' | 'upstream';

export interface Refusal {
  reason: RefusalReason;
  /** The HTTP status (gRPC maps it in http2.ts). */
  status: 401 | 403 | 404 | 413 | 502 | 503;
  message: string;
  /** Seconds, for 503s: when to try again. */
  retryAfter?: number;
}

export function refusal(reason: RefusalReason, status: Refusal['status'], message: string, code: string, retryAfter?: number): Refusal {
  return { reason, status, message: `${message} [${code}]`, ...(retryAfter !== undefined ? { retryAfter } : {}) };
}

/** The HTTP+JSON binding's status names (google.rpc.Code), as the runtime's REST errors carry them. */
const STATUS_NAMES: Record<Refusal['status'], string> = {
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
};

/** gRPC status codes for the same refusals (grpc/status.proto). */
export const GRPC_CODES: Record<Refusal['status'], number> = { 401: 16, 403: 7, 404: 5, 413: 8, 502: 14, 503: 14 };

/** JSON-RPC error codes: -32600 (invalid request) for what the caller must change, -32603 otherwise, as the runtime answers. */
const RPC_CODES: Record<Refusal['status'], number> = { 401: -32600, 403: -32600, 404: -32601, 413: -32600, 502: -32603, 503: -32603 };

export type Binding = 'jsonrpc' | 'rest' | 'grpc';

/** Which binding an HTTP/1.1 request is on: a POST on the JSON-RPC path, else the REST shape. */
export function bindingOf(method: string | undefined, path: string | undefined): Exclude<Binding, 'grpc'> {
  const p = (path ?? '/').split('?')[0];
  return method === 'POST' && p === '/' ? 'jsonrpc' : 'rest';
}

/** The JSON-RPC request id of a buffered body, when it has one (the error answers that id). */
export function rpcId(body: Buffer | undefined): string | number | null {
  if (!body?.length) return null;
  try {
    const id = (JSON.parse(body.toString('utf8')) as { id?: unknown }).id;
    return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
  } catch {
    return null;
  }
}

/** The body of an HTTP error answer in the binding's shape. */
export function errorBody(r: Refusal, binding: Exclude<Binding, 'grpc'>, id: string | number | null = null): Record<string, unknown> {
  const data = r.retryAfter !== undefined ? { retryAfterSeconds: r.retryAfter } : undefined;
  if (binding === 'jsonrpc') return { jsonrpc: '2.0', id, error: { code: RPC_CODES[r.status], message: r.message, ...(data ? { data } : {}) } };
  return { error: { code: r.status, status: STATUS_NAMES[r.status], message: r.message, ...(data ? { details: [data] } : {}) } };
}
