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
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server/server.ts';
import { tokenReviewVerifier } from '../../runtime/a2a/server/token-review.ts';
import { inClusterFromEnv } from '../../runtime/a2a/server/token-review-in-cluster.ts';
import type { TokenVerifier } from '../../runtime/a2a/server/auth.ts';
import { freePort } from '../cli/serve-kit.ts';
import { tmp } from '../loop/kit.ts';
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

/** A token for the API server itself (its default audience), as the kubelet mounts in a pod. */
async function apiToken(sa: string): Promise<string> {
  const r = await kubectl(['create', 'token', sa, '-n', NS]);
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
    ['create', 'serviceaccount', 'reviewer', '-n', NS],
    ['create', 'clusterrolebinding', `${NS}-reviewer`, '--clusterrole', 'system:auth-delegator', '--serviceaccount', `${NS}:reviewer`],
  ]) {
    const r = await kubectl(args);
    expect(r.code, r.stderr).toBe(0);
  }
}, 60_000);

afterAll(async () => {
  await kubectl(['delete', 'clusterrolebinding', `${NS}-reviewer`]);
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc;
}

/**
 * What a pod has: the API server's address in the environment and its ServiceAccount's `token`
 * and `ca.crt` in one folder (here the `reviewer` ServiceAccount, allowed to create TokenReviews
 * as the operator's Role lets a capsule's).
 */
async function podCredentials(): Promise<{ host: string; port: number; dir: string }> {
  const cluster = kubeConfig().getCurrentCluster();
  if (!cluster) throw new Error(`${kubeconfig} has no current cluster`);
  const url = new URL(cluster.server);
  const dir = join(tmp('sa-'), 'serviceaccount');
  mkdirSync(dir);
  const ca = cluster.caData ? Buffer.from(cluster.caData, 'base64') : cluster.caFile ? readFileSync(cluster.caFile) : undefined;
  if (!ca) throw new Error(`${kubeconfig}: the cluster gives no CA, which a pod's ca.crt would hold`);
  writeFileSync(join(dir, 'ca.crt'), ca);
  writeFileSync(join(dir, 'token'), await apiToken('reviewer'));
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 443), dir };
}

/** How the runtime reaches the API server: with a kubeconfig through client-node, or from a pod with its own HTTPS request. */
const TRANSPORTS: Array<[string, () => Promise<(audience: string) => TokenVerifier>]> = [
  ['a kubeconfig, through client-node', async () => (aud) => tokenReviewVerifier({ audience: aud, kubeConfig: kubeConfig(), cacheMs: 0 })],
  [
    "a pod's in-cluster credentials, through one HTTPS request",
    async () => {
      const inCluster = await podCredentials();
      return (aud) => tokenReviewVerifier({ audience: aud, inCluster, cacheMs: 0 });
    },
  ],
];

async function serveWith(verifier: (audience: string) => TokenVerifier): Promise<void> {
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
      serviceAccounts: verifier(audience),
      anonymous: false,
      trustedCallers: [`system:serviceaccount:${NS}:peer`],
    }),
  });
  expect(server.url).toBe(audience);
}

describe.each(TRANSPORTS)('ServiceAccount tokens (TokenReview on a real API server), with %s', (_, transport) => {
  beforeAll(async () => serveWith(await transport()), 60_000);
  afterAll(async () => server?.close());

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

describe("a TokenReview from a pod's in-cluster credentials", () => {
  it("re-reads the pod's own token for each review (the kubelet rotates it), and a refusal by the API server refuses the caller", async () => {
    const inCluster = await podCredentials();
    const verifier = tokenReviewVerifier({ audience: 'http://callee.test/', inCluster, cacheMs: 0 });
    const caller = await token('peer', 'http://callee.test/');
    expect(await verifier.verify(caller)).toEqual({ username: `system:serviceaccount:${NS}:peer` });
    // The pod's token replaced by one of a ServiceAccount that may not create TokenReviews.
    const own = readFileSync(join(inCluster.dir, 'token'), 'utf8');
    writeFileSync(join(inCluster.dir, 'token'), await apiToken('stranger'));
    await expect(verifier.verify(caller)).rejects.toThrow(/^TokenReview: the API server answered 403: .*tokenreviews/);
    writeFileSync(join(inCluster.dir, 'token'), own);
    expect(await verifier.verify(caller)).toEqual({ username: `system:serviceaccount:${NS}:peer` });
  });

  it('is what a pod uses by default: the service host in the environment and the token and CA mounted', async () => {
    const { dir } = await podCredentials();
    expect(inClusterFromEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '6443' }, dir)).toEqual({ host: '10.96.0.1', port: 6443, dir });
    expect(inClusterFromEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, dir)).toEqual({ host: '10.96.0.1', port: 443, dir });
    expect(inClusterFromEnv({}, dir)).toBeUndefined();
    expect(inClusterFromEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, join(dir, 'absent'))).toBeUndefined();
  });
});
