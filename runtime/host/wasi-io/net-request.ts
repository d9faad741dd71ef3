/**
 * One outgoing HTTP request of a guest, performed with Node's http client on a keep-alive agent
 * (net-pool.ts): the response's head, body chunks and end, or an error, go to `send` as the
 * messages of net-protocol.ts. Two routes use it: the main thread's relay for guests whose thread
 * blocks while it waits (net-relay.ts), and a component thread that performs its guests' requests
 * itself while they are suspended (net-local.ts).
 *
 * The allowlist is checked in the guest's thread before a request gets here (runtime/host/wasi.ts).
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { http, https } from '../../builtins.ts';
import type { HttpErrorCode, NetRequest, ToGuest } from './net-protocol.ts';
import type { NetAgents } from './net-pool.ts';

/**
 * A response the guest lets go of before its end (a driver stops reading at the stream's last
 * event, often before the end of the body has reached its thread) is read on to its end here when
 * what is left is small and comes soon, so its connection goes back to the pool; past either
 * bound the connection is closed, as for any abandoned response.
 */
const DRAIN_MAX_BYTES = 64 * 1024;
const DRAIN_MAX_MS = 2000;

export interface LiveRequest {
  /** The guest let go of it: read a started response on to its end unforwarded (bounded), else stop it. */
  abort(): void;
  /** Stops it now, whatever has arrived (the guest's thread ended). */
  destroy(): void;
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

/**
 * Starts `r`; `ended` is told once when nothing more will be sent for it (its end, an error, or
 * the end of a dropped response's drain), so the caller can forget it.
 */
export function startRequest(r: NetRequest, send: (m: ToGuest) => void, agents: NetAgents, ended: () => void): LiveRequest {
  const [host, portText] = splitAuthority(r.authority);
  const secure = r.scheme === 'https:';
  let done = false;
  let res: IncomingMessage | undefined;
  /** The guest let go of the response: it is read on (drain) but nothing more is forwarded. */
  let dropped = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    ended();
  };
  const fail = (code: HttpErrorCode, message: string): void => {
    if (done) return;
    finish();
    if (!dropped) send({ rid: r.rid, kind: 'error', code, message });
  };
  const req: ClientRequest = (secure ? https() : http).request({
    agent: agents.forScheme(secure),
    method: r.method,
    host,
    port: portText ? Number(portText) : secure ? 443 : 80,
    path: r.pathWithQuery || '/',
    headers: groupHeaders(r.headers),
    setHost: !r.headers.some(([k]) => k.toLowerCase() === 'host'),
  });
  const firstByte = ms(r.connectTimeoutNs) ?? ms(r.firstByteTimeoutNs);
  if (firstByte !== undefined) {
    req.setTimeout(firstByte, () => {
      fail({ tag: 'connection-timeout' }, `no response within ${firstByte} ms`);
      req.destroy();
    });
  } else req.setTimeout(0); // the pool's idle timeout (net-pool.ts) is for idle connections only
  req.on('error', (e: NodeJS.ErrnoException) => fail(errorCode(e), e.message));
  req.on('response', (response) => {
    res = response;
    req.setTimeout(0);
    const headers: [string, string][] = [];
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
    send({ rid: r.rid, kind: 'head', status: res.statusCode ?? 0, headers });
    const between = ms(r.betweenBytesTimeoutNs);
    if (between !== undefined) {
      res.setTimeout(between, () => {
        fail({ tag: 'HTTP-response-timeout' }, `no body bytes within ${between} ms`);
        res?.destroy();
      });
    }
    res.on('data', (c: Buffer) => {
      if (!done && !dropped) send({ rid: r.rid, kind: 'chunk', data: new Uint8Array(c.buffer, c.byteOffset, c.byteLength) });
    });
    res.on('end', () => {
      if (done) return;
      finish();
      if (!dropped) send({ rid: r.rid, kind: 'end' });
    });
    res.on('error', (e: NodeJS.ErrnoException) => fail(errorCode(e), e.message));
    res.on('aborted', () => fail({ tag: 'HTTP-protocol-error' }, 'the response was cut before its end'));
  });
  req.end(r.body?.byteLength ? Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) : undefined);
  const destroy = (): void => {
    dropped = true;
    finish();
    req.destroy();
  };
  return {
    destroy,
    abort() {
      if (!res) return destroy();
      // Forwarding stops; the 'end' listener still ends it when the body ends, and Node's agent
      // then takes the connection back (DRAIN_MAX_BYTES, DRAIN_MAX_MS).
      dropped = true;
      let bytes = 0;
      res.setTimeout(DRAIN_MAX_MS, destroy);
      res.on('data', (c: Buffer) => {
        bytes += c.byteLength;
        if (bytes > DRAIN_MAX_BYTES) destroy();
      });
    },
  };
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
