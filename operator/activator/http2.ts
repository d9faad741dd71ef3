/**
 * h2c (HTTP/2 without TLS) requests: gRPC calls, routed by `:authority`, through the same gate as
 * HTTP/1.1 (gate.ts), held while the capsule wakes (HTTP/2 flow control holds the caller's
 * messages meanwhile), then forwarded as one HTTP/2 stream to the pod, both ways as they flow:
 * the caller's messages up, the pod's headers, messages and trailers (grpc-status) down, so
 * client, server and bidirectional streams work. One HTTP/2 connection per pod, shared by streams.
 * A refusal is a trailers-only answer with the gRPC status (UNAUTHENTICATED, PERMISSION_DENIED,
 * NOT_FOUND, UNAVAILABLE with `retry-after`): gRPC answers errors with HTTP 200 and a status, so a
 * gRPC client reads the status rather than guessing it from an HTTP code. A plain HTTP/2 request
 * (not gRPC) gets the HTTP status and the REST shape.
 *
 * Written on node:http2 rather than a proxy library: http-proxy and its kin speak HTTP/1.1 only.
 */
import http2 from 'node:http2';
import type { Endpoint } from './endpoints.ts';
import { CODES, GRPC_CODES, type Refusal, errorBody, refusal } from './errors.ts';
import { type Gate, isRefusal } from './gate.ts';
import { remoteAddressOf } from './listener.ts';

const { NGHTTP2_CANCEL, NGHTTP2_INTERNAL_ERROR } = http2.constants;
const END_STREAM = 0x1;
/** Connection-specific headers HTTP/2 forbids (RFC 9113 §8.2.2); node:http2 refuses to send them. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host']);

function copy(h: http2.IncomingHttpHeaders, keepPseudo: (k: string) => boolean): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || CONNECTION_HEADERS.has(k)) continue;
    if (k.startsWith(':') && !keepPseudo(k)) continue;
    out[k] = v;
  }
  return out;
}

const isGrpc = (h: http2.IncomingHttpHeaders) => String(h['content-type'] ?? '').startsWith('application/grpc');

function refuse(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, r: Refusal): void {
  if (stream.destroyed || stream.closed) return;
  stream.resume();
  const retry = r.retryAfter !== undefined ? { 'retry-after': String(r.retryAfter) } : {};
  const auth = r.status === 401 ? { 'www-authenticate': 'Bearer realm="a2a"' } : {};
  if (stream.headersSent) {
    stream.close(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  if (isGrpc(headers)) {
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(GRPC_CODES[r.status]),
        'grpc-message': encodeURIComponent(r.message),
        ...retry,
        ...auth,
      },
      { endStream: true },
    );
    return;
  }
  stream.respond({ ':status': r.status, 'content-type': 'application/json', ...retry, ...auth });
  stream.end(JSON.stringify(errorBody(r, 'rest')));
}

export class Http2Front {
  private readonly sessions = new Map<string, http2.ClientHttp2Session>();

  constructor(
    private readonly gate: Gate,
    private readonly log: (m: string) => void,
  ) {}

  readonly handle = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void => {
    stream.on('error', () => {}); // a caller's reset: the 'close' handlers below clean up
    this.serve(stream, headers).catch((e: Error) => {
      this.log(`h2 stream ${headers[':path']} failed: ${e.message}`);
      refuse(stream, headers, refusal('upstream', 502, 'the activator failed to deliver the request', CODES.upstream));
    });
  };

  private async serve(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Promise<void> {
    const admitted = this.gate.admit(headers[':authority'] ?? headers.host, remoteAddressOf(stream.session));
    if (isRefusal(admitted)) return refuse(stream, headers, admitted);
    const denied = await this.gate.authenticate(admitted, headers.authorization);
    if (denied) return refuse(stream, headers, denied);
    const gone = new AbortController();
    stream.on('close', () => gone.abort());
    const target = await this.gate.hold(admitted, isGrpc(headers) ? 'gRPC' : 'HTTP/2', gone.signal);
    if (!target) return;
    if (isRefusal(target)) return refuse(stream, headers, target);
    this.forward(stream, headers, target);
  }

  private session(to: Endpoint): http2.ClientHttp2Session {
    const k = `${to.ip}:${to.port}`;
    const have = this.sessions.get(k);
    if (have && !have.closed && !have.destroyed) return have;
    const host = to.ip.includes(':') ? `[${to.ip}]` : to.ip;
    const s = http2.connect(`http://${host}:${to.port}`);
    const forget = () => {
      if (this.sessions.get(k) === s) this.sessions.delete(k);
    };
    s.on('error', (e) => {
      forget();
      this.log(`h2 connection to ${k}: ${e.message}`);
    });
    s.on('close', forget);
    s.on('goaway', forget);
    this.sessions.set(k, s);
    return s;
  }

  private forward(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, to: Endpoint): void {
    const up = this.session(to).request(copy(headers, (k) => k === ':method' || k === ':path' || k === ':authority' || k === ':scheme'));
    let trailers: http2.IncomingHttpHeaders | undefined;
    let ended = false;
    up.on('response', (h, flags) => {
      const out = copy(h, (k) => k === ':status');
      if (flags & END_STREAM) {
        ended = true;
        stream.respond(out, { endStream: true }); // trailers-only (a gRPC error status)
        return;
      }
      stream.respond(out, { waitForTrailers: true });
      up.pipe(stream);
    });
    up.on('trailers', (t) => (trailers = t));
    up.on('end', () => (ended = true));
    stream.on('wantTrailers', () => stream.sendTrailers(copy(trailers ?? {}, () => false)));
    up.on('error', (e) => {
      if (!stream.headersSent) {
        refuse(stream, headers, this.gate.refused(refusal('upstream', 502, `the capsule pod ${to.ip}:${to.port} failed: ${e.message}`, CODES.upstream)));
      } else if (!stream.closed) stream.close(NGHTTP2_INTERNAL_ERROR);
    });
    up.on('close', () => {
      if (!ended && !stream.closed && stream.headersSent) stream.close(up.rstCode || NGHTTP2_INTERNAL_ERROR);
    });
    // The caller cancelled (or went away): cancel the capsule's side too.
    stream.on('close', () => {
      if (!up.closed) up.close(NGHTTP2_CANCEL);
    });
    stream.pipe(up);
  }

  close(): void {
    for (const s of this.sessions.values()) s.destroy();
    this.sessions.clear();
  }
}
