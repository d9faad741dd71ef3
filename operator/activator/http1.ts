/**
 * HTTP/1.1 requests (JSON-RPC, HTTP+JSON, the card): through the gate (gate.ts), the body buffered
 * (at most 4 MiB, what the runtime itself takes) while the capsule wakes, then forwarded to the
 * ready pod as sent (method, path, headers incl. Authorization and traceparent, body) and the
 * answer streamed back as it comes: a server-sent-events stream flows event by event.
 *
 * Why not a proxy library (http-proxy, http-proxy-middleware): the forwarding is a few lines of
 * node:http, the hold must come between reading the request and opening the upstream connection,
 * and the same port serves h2c gRPC (http2.ts), which those libraries do not proxy.
 */
import http from 'node:http';
import type { Capsule } from '../api/types.ts';
import type { Endpoint } from './endpoints.ts';
import { type Binding, CODES, type Refusal, bindingOf, errorBody, refusal, rpcId } from './errors.ts';
import { CARD_PATHS, type Gate, isRefusal } from './gate.ts';

export const MAX_BODY = 4 << 20;

/** Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-authenticate',
]);

function forwardable(headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase()),
  );
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && !named.has(k)) out[k] = v;
  return out;
}

function reply(res: http.ServerResponse, r: Refusal, binding: Exclude<Binding, 'grpc'>, body?: Buffer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
  if (r.retryAfter !== undefined) headers['retry-after'] = String(r.retryAfter);
  if (r.status === 401) headers['www-authenticate'] = 'Bearer realm="a2a"';
  res.writeHead(r.status, headers);
  res.end(JSON.stringify(errorBody(r, binding, binding === 'jsonrpc' ? rpcId(body) : null)));
}

/** The request body, or a 413 past MAX_BODY (the rest is drained, not kept). */
function readBody(req: http.IncomingMessage): Promise<Buffer | Refusal> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    const tooLarge = () => refusal('body_too_large', 413, `request body exceeds the ${MAX_BODY}-byte limit`, CODES.bodyTooLarge);
    if (declared > MAX_BODY) {
      req.resume();
      resolve(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY ? tooLarge() : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export class Http1Front {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  constructor(
    private readonly gate: Gate,
    private readonly log: (m: string) => void,
  ) {}

  readonly handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.serve(req, res).catch((e: Error) => {
      this.log(`request ${req.method} ${req.url} failed: ${e.message}`);
      if (!res.headersSent) reply(res, refusal('upstream', 502, 'the activator failed to deliver the request', CODES.upstream), 'rest');
      else res.destroy();
    });
  };

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const binding = bindingOf(req.method, req.url);
    const admitted = this.gate.admit(req.headers.host, req.socket.remoteAddress ?? '');
    if (isRefusal(admitted)) {
      req.resume();
      return reply(res, admitted, binding);
    }
    const c = admitted;
    const path = (req.url ?? '/').split('?')[0]!;
    const isCard = req.method === 'GET' && CARD_PATHS.has(path);
    if (isCard && !this.gate.ready(c)) return this.card(c, req, res);
    // The card is served without authentication, asleep or awake, as the runtime serves it.
    const denied = isCard ? undefined : await this.gate.authenticate(c, req.headers.authorization);
    if (denied) {
      req.resume();
      return reply(res, denied, binding);
    }
    const body = await readBody(req);
    if (isRefusal(body)) return reply(res, this.gate.refused(body), binding);
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const target = await this.gate.hold(c, binding === 'jsonrpc' ? 'JSON-RPC' : 'HTTP+JSON', gone.signal);
    if (!target) return;
    if (isRefusal(target)) return reply(res, target, binding, body);
    await this.forward(req, res, body, target);
  }

  private card(c: Capsule, req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume();
    const card = this.gate.card(c);
    if (isRefusal(card)) {
      reply(res, card, 'rest');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
    res.end(card);
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, to: Endpoint): Promise<void> {
    return new Promise((resolve) => {
      let finished = false;
      const headers = forwardable(req.headers);
      if (body.length || req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH') headers['content-length'] = String(body.length);
      const up = http.request({ host: to.ip, port: to.port, method: req.method, path: req.url, headers, agent: this.agent }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, forwardable(upRes.headers));
        // Server-sent events: each chunk goes out as it arrives (node:http writes it at once).
        res.flushHeaders();
        upRes.pipe(res);
        upRes.on('end', () => {
          finished = true;
          resolve();
        });
        upRes.on('error', () => {
          res.destroy();
          resolve();
        });
      });
      up.on('error', (e) => {
        if (!res.headersSent) {
          const r = this.gate.refused(refusal('upstream', 502, `the capsule pod ${to.ip}:${to.port} failed: ${e.message}`, CODES.upstream));
          reply(res, r, bindingOf(req.method, req.url), body);
        } else res.destroy();
        resolve();
      });
      // The caller went away mid-answer: stop the capsule's side too (a stream subscription ends).
      res.on('close', () => {
        if (!finished) up.destroy();
      });
      up.end(body);
    });
  }
}
