/**
 * Capsule-to-capsule A2A authentication with Kubernetes ServiceAccount tokens, verified by
 * TokenReview against the real API server of the test cluster (runtime/a2a/server/token-review.ts):
 * a token projected for this agent's URL is accepted (its holder is the caller, and a declared
 * peer may pass on trust); a token for another audience, a revoked token (its bound object gone),
 * a garbage token and no token are refused. Expired tokens: the API server will not issue a token
 * shorter than 10 minutes, but the test cluster's harness owns the ServiceAccount signing key, so
 * the test re-signs a real token's claims with an `exp` in the past (and with another audience);
 * the same claims re-signed unexpired are accepted, so only the changed claim is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server/server.ts';
import { tokenReviewVerifier } from '../../runtime/a2a/server/token-review.ts';
import { freePort } from '../cli/serve-kit.ts';
import { cluster, eventually, kubeconfig, kubectl } from './helpers.ts';

const NS = `a2a-sa-${Math.floor(Math.random() * 1e6)}`;
const seen: Array<{ trust: string }> = [];
let server: A2AServer;
let audience: string;

async function token(sa: string, aud: string, extra: string[] = []): Promise<string> {
  const r = await kubectl(['create', 'token', sa, '-n', NS, '--audience', aud, ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

async function send(bearer: string | undefined, trust = 'trusted') {
  const r = await fetch(server.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'A2A-Version': '1.0',
      'x-murmur-task-origin': 'peer',
      'x-murmur-task-trust': trust,
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    }),
  });
  return { status: r.status, body: await r.json() };
}

beforeAll(async () => {
  for (const args of [
    ['create', 'namespace', NS],
    ['create', 'serviceaccount', 'peer', '-n', NS],
    ['create', 'serviceaccount', 'stranger', '-n', NS],
  ]) {
    const r = await kubectl(args);
    expect(r.code, r.stderr).toBe(0);
  }
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  // The audience is the agent's own URL: its port is chosen first so the one server knows it.
  const port = await freePort();
  audience = `http://127.0.0.1:${port}/`;
  server = await startA2AServer({
    card: { name: 'callee', version: '1.0.0', description: 'callee' },
    acceptance: 'queue',
    queueDepth: 8,
    executor: async (ctx) => {
      seen.push({ trust: ctx.trust });
      return { state: 'completed', text: `${ctx.trust}` };
    },
    port,
    auth: createAuthenticator({
      serviceAccounts: tokenReviewVerifier({ audience, kubeConfig: kc, cacheMs: 0 }),
      anonymous: false,
      trustedCallers: [`system:serviceaccount:${NS}:peer`],
    }),
  });
  expect(server.url).toBe(audience);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('ServiceAccount tokens (TokenReview on a real API server)', () => {
  it('the card offers the serviceAccount scheme', async () => {
    const card = await (await fetch(new URL('.well-known/agent-card.json', server.url), { headers: { 'A2A-Version': '1.0' } })).json();
    expect(card.securitySchemes.serviceAccount.httpAuthSecurityScheme).toMatchObject({ scheme: 'Bearer', bearerFormat: 'JWT' });
  });

  it('a token projected for this agent’s URL is accepted; a declared peer passes on trust, another ServiceAccount does not', async () => {
    const ok = await send(await token('peer', audience));
    expect(ok.status).toBe(200);
    expect(ok.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(seen.at(-1)).toEqual({ trust: 'trusted' });
    const other = await send(await token('stranger', audience));
    expect(other.status).toBe(200);
    expect(seen.at(-1)).toEqual({ trust: 'untrusted' });
  });

  it('a token for another audience is refused', async () => {
    const r = await send(await token('peer', 'http://some-other-capsule.default.svc:8080/'));
    expect(r.status).toBe(401);
    expect(r.body.error.message).toBe('invalid credentials');
  });

  it('missing and garbage tokens are refused', async () => {
    expect((await send(undefined)).status).toBe(401);
    expect((await send('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).status).toBe(401);
  });

  it('a revoked token (its bound object deleted) is refused', async () => {
    expect((await kubectl(['create', 'secret', 'generic', 'binder', '-n', NS])).code).toBe(0);
    const t = await token('peer', audience, ['--bound-object-kind', 'Secret', '--bound-object-name', 'binder']);
    expect((await send(t)).status).toBe(200);
    expect((await kubectl(['delete', 'secret', 'binder', '-n', NS])).code).toBe(0);
    await eventually('the revoked token is refused', async () => (await send(t)).status === 401, 30_000);
  });

  describe("tokens signed with the cluster's own ServiceAccount key", () => {
    /** A real token's claims, changed by `over`, signed again with the API server's signing key (same kid). */
    async function resign(over: Record<string, unknown>): Promise<string> {
      if (!cluster.saSigningKey)
        throw new Error("this test signs tokens with the test cluster's ServiceAccount key; an external cluster ($KUBECONFIG) does not give it");
      const real = await token('peer', audience);
      const { kid } = decodeProtectedHeader(real);
      const claims = { ...decodeJwt(real), ...over };
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', ...(kid ? { kid } : {}) })
        .sign(createPrivateKey(readFileSync(cluster.saSigningKey, 'utf8')));
    }
    /** What the API server itself says of a token (its TokenReview status), to name the reason the runtime does not. */
    async function review(t: string, aud: string) {
      const r = await kubectl(
        ['create', '-o', 'json', '-f', '-'],
        JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: t, audiences: [aud] } }),
      );
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).status as { authenticated?: boolean; error?: string };
    }
    const now = () => Math.floor(Date.now() / 1000);

    it('the same claims re-signed are accepted (the test signs exactly as the API server does)', async () => {
      const t = await resign({});
      const r = await send(t);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(seen.at(-1)).toEqual({ trust: 'trusted' });
    });

    it('an expired token is refused with 401 invalid credentials (the API server: expired)', async () => {
      const t = await resign({ iat: now() - 7200, nbf: now() - 7200, exp: now() - 3600 });
      const r = await send(t);
      expect(r.status).toBe(401);
      expect(r.body.error.message).toBe('invalid credentials');
      const st = await review(t, audience);
      expect(st.authenticated ?? false).toBe(false);
      expect(st.error).toMatch(/expired/i);
    });

    it('a token for another audience is refused with 401 invalid credentials (the API server: audience)', async () => {
      const t = await resign({ aud: ['http://another-capsule.default.svc.cluster.local:8080/'] });
      const r = await send(t);
      expect(r.status).toBe(401);
      expect(r.body.error.message).toBe('invalid credentials');
      const st = await review(t, audience);
      expect(st.authenticated ?? false).toBe(false);
      expect(st.error).toMatch(/audience/i);
    });

    it('a token signed with another key is refused', async () => {
      const real = await token('peer', audience);
      const { kid } = decodeProtectedHeader(real);
      const forged = await new SignJWT(decodeJwt(real))
        .setProtectedHeader({ alg: 'RS256', ...(kid ? { kid } : {}) })
        .sign(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
      expect((await send(forged)).status).toBe(401);
    });
  });
});
