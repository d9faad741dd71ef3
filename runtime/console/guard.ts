/**
 * What keeps other local web pages and other hosts' names away from the console's API. The
 * console listens on 127.0.0.1 only, but any page the viewer's browser opens could send requests
 * there, and a DNS-rebound name could make them same-origin. So every API call must:
 *  - name this server by its loopback address in Host (`127.0.0.1:<port>` or `localhost:<port>`),
 *    which a rebound name does not;
 *  - come from the console's own origin when the browser says where it comes from (Origin);
 *  - carry the random per-run token (`x-mur-console-token`), which only the URL printed at start
 *    holds; a custom header also makes a cross-origin browser send a CORS preflight, which the
 *    console never answers with permission.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const TOKEN_HEADER = 'x-mur-console-token';

export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export interface Refusal {
  status: number;
  message: string;
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The Host and Origin checks every request passes (the page too): undefined when it may go on. */
export function checkOrigin(req: IncomingMessage, port: number): Refusal | undefined {
  const hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  const host = req.headers.host ?? '';
  if (!hosts.includes(host)) return { status: 421, message: `Host '${host}' is not this console (${hosts.join(' or ')})` };
  const origin = req.headers.origin;
  if (origin !== undefined && !hosts.some((h) => origin === `http://${h}`))
    return { status: 403, message: `requests from origin '${origin}' are not accepted` };
  return undefined;
}

/** The token check of an API call, after checkOrigin. */
export function checkToken(req: IncomingMessage, token: string): Refusal | undefined {
  const given = req.headers[TOKEN_HEADER];
  if (typeof given !== 'string' || !sameToken(given, token))
    return { status: 401, message: `missing or wrong ${TOKEN_HEADER} header (the console's URL carries the token)` };
  return undefined;
}
