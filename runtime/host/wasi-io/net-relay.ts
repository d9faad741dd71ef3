/**
 * The main thread's side of a component's outgoing HTTP (net-protocol.ts): performs each request
 * the guest's thread sends with Node's http client on a keep-alive agent, and forwards the
 * response's head, body chunks and end. One hop per request instead of preview2-shim's I/O worker,
 * which took 16 synchronous round trips of 0.3–2.5 ms each per provider request (measured in
 * `mur serve` under load: 11 ms per request against 0.8 ms for a plain Node request).
 *
 * The allowlist is checked in the guest's thread before a request is sent (runtime/host/wasi.ts);
 * the connections are a bounded keep-alive pool (net-pool.ts).
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { http, https } from '../../builtins.ts';
import type { MessagePort } from 'node:worker_threads';
import type { HttpErrorCode, NetRequest, ToGuest, ToMain } from './net-protocol.ts';
import { SHARED_AGENTS, type NetAgents } from './net-pool.ts';

/**
 * A response the guest lets go of before its end (a driver stops reading at the stream's last
 * event, often before the end of the body has reached its thread) is read on to its end here when
 * what is left is small and comes soon, so its connection goes back to the pool; past either
 * bound the connection is closed, as for any abandoned response.
 */
const DRAIN_MAX_BYTES = 64 * 1024;
const DRAIN_MAX_MS = 2000;

interface Live {
  req: ClientRequest;
  res?: IncomingMessage;
  /** The guest let go of the response: it is read on (drain) but nothing more is forwarded. */
  dropped?: boolean;
}

/** The wasi:http error code for a failure of Node's client (the mapping preview2-shim uses). */
export function errorCode(e: NodeJS.ErrnoException): HttpErrorCode {
  switch (e.code) {
    case 'ECONNRESET':
      return { tag: 'HTTP-protocol-error' };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { tag: 'DNS-error', val: { rcode: e.code, infoCode: typeof e.errno === 'number' ? Math.abs(e.errno) : undefined } };
    case 'ECONNREFUSED':
      return { tag: 'connection-refused' };
    case 'ETIMEDOUT':
      return { tag: 'connection-timeout' };
    default:
      return { tag: 'internal-error', val: String(e.message ?? e) };
  }
}

const ms = (ns: bigint | undefined): number | undefined => (ns === undefined ? undefined : Math.max(1, Number(ns / 1_000_000n)));

/** Serves one component thread's requests until its port closes (the worker ended). */
export function serveNet(port: MessagePort, flag: Int32Array, agents: NetAgents = SHARED_AGENTS): void {
  const live = new Map<number, Live>();
  // What one turn of this thread has for the guest goes as one post and one wake-up, in order: a
  // provider's streamed answer comes as several body chunks per socket read (a one-turn answer of
  // the scripted provider: a head, 7 chunks and the end, 9 posts and notifies on the main thread).
  let outbox: ToGuest[] = [];
  const flush = (): void => {
    const batch = outbox;
    outbox = [];
    port.postMessage(batch);
    Atomics.add(flag, 0, 1);
    Atomics.notify(flag, 0);
  };
  const send = (m: ToGuest): void => {
    if (outbox.push(m) === 1) queueMicrotask(flush);
  };
  const start = (r: NetRequest): void => {
    const [host, portText] = splitAuthority(r.authority);
    const secure = r.scheme === 'https:';
    let done = false;
    const fail = (code: HttpErrorCode, message: string): void => {
      if (done) return;
      done = true;
      live.delete(r.rid);
      send({ rid: r.rid, kind: 'error', code, message });
    };
    const req = (secure ? https() : http).request({
      agent: agents.forScheme(secure),
      method: r.method,
      host,
      port: portText ? Number(portText) : secure ? 443 : 80,
      path: r.pathWithQuery || '/',
      headers: groupHeaders(r.headers),
      setHost: !r.headers.some(([k]) => k.toLowerCase() === 'host'),
    });
    const entry: Live = { req };
    live.set(r.rid, entry);
    const firstByte = ms(r.connectTimeoutNs) ?? ms(r.firstByteTimeoutNs);
    if (firstByte !== undefined) {
      req.setTimeout(firstByte, () => {
        fail({ tag: 'connection-timeout' }, `no response within ${firstByte} ms`);
        req.destroy();
      });
    } else req.setTimeout(0); // the pool's idle timeout (net-pool.ts) is for idle connections only
    req.on('error', (e: NodeJS.ErrnoException) => fail(errorCode(e), e.message));
    req.on('response', (res) => {
      entry.res = res;
      req.setTimeout(0);
      const headers: [string, string][] = [];
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
      send({ rid: r.rid, kind: 'head', status: res.statusCode ?? 0, headers });
      const between = ms(r.betweenBytesTimeoutNs);
      if (between !== undefined) {
        res.setTimeout(between, () => {
          fail({ tag: 'HTTP-response-timeout' }, `no body bytes within ${between} ms`);
          res.destroy();
        });
      }
      res.on('data', (c: Buffer) => {
        if (!done && !entry.dropped) send({ rid: r.rid, kind: 'chunk', data: new Uint8Array(c.buffer, c.byteOffset, c.byteLength) });
      });
      res.on('end', () => {
        if (done) return;
        done = true;
        live.delete(r.rid);
        if (!entry.dropped) send({ rid: r.rid, kind: 'end' });
      });
      res.on('error', (e: NodeJS.ErrnoException) => fail(errorCode(e), e.message));
      res.on('aborted', () => fail({ tag: 'HTTP-protocol-error' }, 'the response was cut before its end'));
    });
    req.end(r.body?.byteLength ? Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) : undefined);
  };
  port.on('message', (m: ToMain) => {
    if (m.op === 'request') start(m);
    else if (m.op === 'abort') {
      const entry = live.get(m.rid);
      if (entry?.res) drain(m.rid, entry, live);
      else {
        entry?.req.destroy();
        live.delete(m.rid);
      }
    }
  });
  // The worker ended (finished, retired or terminated at a deadline): drop what it left running.
  port.on('close', () => {
    for (const { req } of live.values()) req.destroy();
    live.clear();
  });
  port.unref();
}

/**
 * Reads a dropped response on to its end without forwarding it (DRAIN_MAX_BYTES, DRAIN_MAX_MS), so
 * its connection returns to the pool; closes it past either bound. It stays in `live` meanwhile, so
 * a worker that ends still closes it.
 */
function drain(rid: number, entry: Live, live: Map<number, Live>): void {
  const { req, res } = entry;
  if (!res) return;
  // Forwarding stops; its 'end' listener still takes the entry out of `live` when the body ends,
  // and Node's agent then takes the connection back.
  entry.dropped = true;
  let bytes = 0;
  const close = (): void => {
    live.delete(rid);
    req.destroy();
  };
  res.setTimeout(DRAIN_MAX_MS, close);
  res.on('data', (c: Buffer) => {
    bytes += c.byteLength;
    if (bytes > DRAIN_MAX_BYTES) close();
  });
}

function splitAuthority(a: string): [string, string | undefined] {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(a);
  if (!m) return [a, undefined];
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  return [host, m[2]];
}

/** Header pairs as Node's request options take them (a repeated name as an array, in order). */
function groupHeaders(pairs: [string, string][]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of pairs) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}
