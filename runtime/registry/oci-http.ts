/**
 * The HTTP(S) requests of the OCI client. node:http/https rather than the global fetch: fetch takes
 * no CA option in Node without the undici package (not a dependency of the runtime image), and a
 * registry behind a private CA is the common self-hosted case — `MURMUR_OCI_CA_FILE` (PEM, added to
 * Node's bundled roots) is passed as `ca` here. Redirects are followed (registries send blob GETs to
 * their storage), dropping `authorization` when the redirect leaves the origin, as fetch does.
 * Answers are returned as a standard `Response` so the client reads them like fetch's.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { http, https } from '../builtins.ts';
import { readFileSync } from 'node:fs';

export interface HttpInit {
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  timeoutMs?: number;
}

/** The CA bundle to trust besides Node's: `MURMUR_OCI_CA_FILE`, read once per path. */
let caCache: { file: string; ca: string[] } | undefined;
function extraCa(): string[] | undefined {
  const file = process.env.MURMUR_OCI_CA_FILE;
  if (!file) return undefined;
  if (caCache?.file !== file) caCache = { file, ca: [...process.getBuiltinModule('node:tls').rootCertificates, readFileSync(file, 'utf8')] };
  return caCache.ca;
}

/** Error codes of a TLS certificate the client could not verify (as opposed to a network failure). */
const CERT_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
export function isCertError(e: unknown): e is NodeJS.ErrnoException {
  return typeof (e as NodeJS.ErrnoException)?.code === 'string' && CERT_CODES.has((e as NodeJS.ErrnoException).code!);
}
/** The server does not speak TLS (a plain-http registry answered the handshake). */
export function isNotTls(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code ?? '';
  return code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number|packet length too long/i.test((e as Error)?.message ?? '');
}

function once(url: URL, init: HttpInit): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const mod = url.protocol === 'https:' ? https() : http;
  const ca = url.protocol === 'https:' ? extraCa() : undefined;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      url,
      {
        method: init.method ?? 'GET',
        headers: { ...(init.headers ?? {}), ...(init.body ? { 'content-length': String(init.body.byteLength) } : {}) },
        ...(ca ? { ca } : {}),
        timeout: init.timeoutMs ?? 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${init.timeoutMs ?? 60_000} ms`), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(init.body ? Buffer.from(init.body) : undefined);
  });
}

/** One request, redirects followed (at most 5); resolves to a standard Response. */
export async function httpRequest(target: string, init: HttpInit = {}): Promise<Response> {
  let url = new URL(target);
  let headers = { ...(init.headers ?? {}) };
  let method = init.method ?? 'GET';
  let body = init.body;
  for (let hop = 0; ; hop++) {
    const r = await once(url, { ...init, method, headers, ...(body ? { body } : {}) });
    const location = r.headers.location;
    if ([301, 302, 303, 307, 308].includes(r.status) && location && hop < 5) {
      const next = new URL(location, url);
      if (next.origin !== url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'authorization'));
      if (r.status === 303 || ((r.status === 301 || r.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      url = next;
      continue;
    }
    const h = new Headers();
    for (const [k, v] of Object.entries(r.headers)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
    }
    const empty = r.body.byteLength === 0 || [101, 204, 205, 304].includes(r.status) || method === 'HEAD';
    return new Response(empty ? null : new Uint8Array(r.body), { status: r.status, headers: h });
  }
}
