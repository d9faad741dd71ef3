/**
 * Capsule-to-capsule A2A authentication with Kubernetes ServiceAccount tokens, verified by
 * TokenReview against the real API server of the test cluster (runtime/a2a/token-review.ts):
 * a token projected for this agent's URL is accepted (its holder is the caller, and a declared
 * peer may pass on trust); a token for another audience, a revoked token (its bound object gone),
 * a garbage token and no token are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { createAuthenticator } from '../../runtime/a2a/auth.ts';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server.ts';
import { tokenReviewVerifier } from '../../runtime/a2a/token-review.ts';
import { freePort } from '../cli/serve-kit.ts';
import { eventually, kubeconfig, kubectl } from './helpers.ts';

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
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
  });
  return { status: r.status, body: await r.json() };
}

beforeAll(async () => {
  for (const args of [['create', 'namespace', NS], ['create', 'serviceaccount', 'peer', '-n', NS], ['create', 'serviceaccount', 'stranger', '-n', NS]]) {
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
});
