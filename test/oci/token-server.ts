/**
 * A Docker registry token server (the registry's own auth protocol, docs "Token Authentication
 * Specification"): `GET <realm>?service=…&scope=repository:<name>:<actions>` with basic
 * credentials answers `{token, access_token, expires_in}`, a JWT (ES256, `kid` in its header)
 * the registry verifies against the JWKS file it is configured with (`auth.token.jwks`). It is
 * the other half of the protocol under test, not a stand-in for our code: distribution itself
 * verifies every token it issues.
 *
 * Users have per-repository actions: the token grants the requested actions they hold; a known
 * user holding none of them is refused with 403, unknown users and wrong passwords with 401.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { tmp } from '../registry/helpers.ts';

export interface TokenUser {
  password: string;
  /** repository name → actions (`pull`, `push`). */
  repos: Record<string, string[]>;
}

export interface TokenServer {
  realm: string;
  service: string;
  issuer: string;
  jwks: string;
  /** Every request: the scope asked for and the user (never the password). */
  requests: { scope: string | null; user: string | null; status: number }[];
  stop(): Promise<void>;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export async function startTokenServer(users: Record<string, TokenUser>): Promise<TokenServer> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = randomBytes(8).toString('hex');
  const jwks = path.join(tmp('oci-jwks-'), 'jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] }));
  const service = 'capsule-test-registry';
  const issuer = 'capsule-test-token-issuer';
  const requests: TokenServer['requests'] = [];

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://token');
    const scope = url.searchParams.get('scope');
    const m = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    const [user, pass] = m ? Buffer.from(m[1]!, 'base64').toString('utf8').split(/:(.*)/s) : [null, null];
    const answer = (status: number, body: unknown) => {
      requests.push({ scope, user: user ?? null, status });
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const u = user ? users[user] : undefined;
    if (!u || u.password !== pass) return answer(401, { errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] });
    const access: { type: string; name: string; actions: string[] }[] = [];
    const sm = scope ? /^repository:([^:]+):(.+)$/.exec(scope) : null;
    if (sm) {
      const held = u.repos[sm[1]!] ?? [];
      const granted = sm[2]!.split(',').filter((a) => held.includes(a));
      if (granted.length === 0) return answer(403, { errors: [{ code: 'DENIED', message: `no access to ${sm[1]}` }] });
      access.push({ type: 'repository', name: sm[1]!, actions: granted });
    }
    const now = Math.floor(Date.now() / 1000);
    const head = b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid }));
    const claims = b64url(
      JSON.stringify({ iss: issuer, sub: user, aud: service, exp: now + 300, nbf: now - 10, iat: now, jti: randomBytes(8).toString('hex'), access }),
    );
    const sig = sign('sha256', Buffer.from(`${head}.${claims}`), { key: privateKey, dsaEncoding: 'ieee-p1363' });
    const token = `${head}.${claims}.${b64url(sig)}`;
    answer(200, { token, access_token: token, expires_in: 300 });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const realm = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  return {
    realm,
    service,
    issuer,
    jwks,
    requests,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}
