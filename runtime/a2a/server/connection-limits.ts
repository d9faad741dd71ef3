/**
 * Budgets for the A2A HTTP server's connections (issue 38 §4): a client sending its headers or
 * body slowly is cut after seconds, not Node's default 300 s, and one remote address holds at
 * most a fixed number of connections. Node's own `headersTimeout` / `requestTimeout` do the
 * cutting (they count until the request is fully received, so a long SSE response is never cut);
 * this file chooses the values, answers a cut request with a JSON 408 that names the budget, and
 * refuses connections over the per-client cap with a 503 before their request is read.
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { MurError } from '../../errors.ts';

export interface ConnectionLimits {
  /** Time for a request's headers to arrive, from its first byte (or from connecting). 0 = none. Default 10 000 ms. */
  headersTimeoutMs?: number;
  /** Time for a whole request (headers and body) to arrive. 0 = none. Default 30 000 ms. */
  requestTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open after a response. Default 65 000 ms. */
  keepAliveTimeoutMs?: number;
  /** Open connections one remote address may hold; past it a new one gets 503. 0 = no cap. Default 256. */
  maxConnectionsPerClient?: number;
}

export const LIMIT_DEFAULTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 65_000,
  maxConnectionsPerClient: 256,
} as const satisfies Required<ConnectionLimits>;

export type ResolvedLimits = Required<ConnectionLimits>;

/** The limits with defaults filled in; a negative, fractional or inconsistent value is refused (E-A2A-040). */
export function resolveLimits(l: ConnectionLimits = {}): ResolvedLimits {
  const r: ResolvedLimits = { ...LIMIT_DEFAULTS };
  for (const k of Object.keys(LIMIT_DEFAULTS) as Array<keyof ResolvedLimits>) {
    const v = l[k];
    if (v === undefined) continue;
    if (!Number.isInteger(v) || v < 0) {
      throw new MurError('E-A2A-040', `A2A server limit ${k} must be a whole number ≥ 0, got ${String(v)}`, {
        hint: 'fix the value (0 turns the limit off)',
        location: { field: k },
      });
    }
    r[k] = v;
  }
  // Node refuses a headers budget longer than the whole request's: say so in our terms.
  if (r.requestTimeoutMs > 0 && r.headersTimeoutMs > r.requestTimeoutMs) {
    throw new MurError(
      'E-A2A-040',
      `A2A server limit headersTimeoutMs (${r.headersTimeoutMs}) is longer than requestTimeoutMs (${r.requestTimeoutMs}), which includes the headers`,
      {
        hint: 'make the request budget at least the headers budget',
        location: { field: 'headersTimeoutMs' },
      },
    );
  }
  return r;
}

/**
 * The http.Server options for these limits. Node checks the budgets on an interval (default
 * 30 s, which would let a 10 s budget run to 40 s): a quarter of the shorter budget, within
 * 10 ms – 1 s.
 */
export function serverOptions(l: ResolvedLimits): ServerOptions {
  const budgets = [l.headersTimeoutMs, l.requestTimeoutMs].filter((b) => b > 0);
  const shortest = budgets.length > 0 ? Math.min(...budgets) : 4000;
  return {
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    keepAliveTimeout: l.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(shortest / 4))),
  };
}

function rawResponse(status: string, body: Record<string, unknown>, extra: string[] = []): string {
  const json = JSON.stringify(body);
  return [`HTTP/1.1 ${status}`, 'Content-Type: application/json', 'Connection: close', ...extra, `Content-Length: ${Buffer.byteLength(json)}`, '', json].join(
    '\r\n',
  );
}

/** Node's own statuses for malformed requests, kept for the errors it would have answered itself. */
function clientErrorStatus(code: string | undefined): string {
  if (code === 'HPE_HEADER_OVERFLOW') return '431 Request Header Fields Too Large';
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return '413 Payload Too Large';
  return '400 Bad Request';
}

/**
 * Applies the per-client cap and the timeout answers to a listening-to-be http.Server. Returns
 * a function that destroys the refused sockets still draining (for close()).
 */
export function applyConnectionLimits(server: Server, l: ResolvedLimits): () => void {
  // A request cut by its budget gets a JSON 408 naming it; other malformed requests get Node's
  // usual status. Both close the connection (its parser state is unusable).
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const res = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (res?.headersSent) {
      socket.destroy();
      return;
    }
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const message = timedOut
      ? `request not received within the server's budget (headers ${l.headersTimeoutMs / 1000} s, whole request ${l.requestTimeoutMs / 1000} s); the connection is closed [E-A2A-042]`
      : `malformed HTTP request (${err.code ?? err.message})`;
    socket.end(rawResponse(timedOut ? '408 Request Timeout' : clientErrorStatus(err.code), { error: { code: timedOut ? 408 : 400, message } }));
    socket.destroySoon();
  });
  if (l.maxConnectionsPerClient === 0) return () => undefined;

  const open = new Map<string, number>();
  const refused = new Set<Socket>();
  // Node's own listener parses HTTP on every connection: it is called only for connections under
  // the cap, so a refused one is never parsed (and its request never read).
  const [parse] = server.listeners('connection') as Array<(socket: Socket) => void>;
  if (!parse) throw new Error('applyConnectionLimits: the http.Server has no connection listener');
  server.removeListener('connection', parse);
  server.on('connection', (socket: Socket) => {
    const who = socket.remoteAddress ?? '';
    const n = open.get(who) ?? 0;
    if (n >= l.maxConnectionsPerClient) {
      refuse(socket, who);
      return;
    }
    open.set(who, n + 1);
    socket.once('close', () => {
      const left = (open.get(who) ?? 1) - 1;
      if (left <= 0) open.delete(who);
      else open.set(who, left);
    });
    parse.call(server, socket);
  });

  function refuse(socket: Socket, who: string): void {
    refused.add(socket);
    const message = `too many connections from ${who}: at most ${l.maxConnectionsPerClient} open connections per client; close idle ones or retry [E-A2A-041]`;
    // Answered before reading the request; what the client sends meanwhile is discarded, and the
    // socket is gone by the headers budget at the latest, so refused clients cannot hold it.
    socket.on('error', () => undefined);
    socket.resume();
    socket.end(rawResponse('503 Service Unavailable', { error: { code: 503, message } }, ['Retry-After: 1']));
    const grace = setTimeout(() => socket.destroy(), l.headersTimeoutMs || LIMIT_DEFAULTS.headersTimeoutMs);
    grace.unref();
    socket.once('close', () => {
      clearTimeout(grace);
      refused.delete(socket);
    });
  }

  return () => {
    for (const s of refused) s.destroy();
  };
}
