/**
 * OCI registry authentication and TLS against the real CNCF distribution registry (issue 16):
 *  - basic auth (`auth: htpasswd`) over https, with a self-signed CA this test creates, trusted
 *    through MURMUR_OCI_CA_FILE; credentials from Docker's config.json (DOCKER_CONFIG) or env;
 *  - Docker token auth (`auth: token`): the registry verifies JWTs from a token server (the other
 *    half of the registry's auth protocol, test/oci/token-server.ts) against the JWKS it trusts.
 * Components are pushed by the real oras CLI. Every failure has its code (E-REG-018 401,
 * E-REG-019 403 / insufficient scope, E-REG-020 an unverifiable certificate) and no password is
 * ever printed.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLock } from '../../runtime/registry/lock.ts';
import { stageCapsule } from '../../runtime/session/stage.ts';
import { mur } from '../cli/mur.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { tmp } from '../registry/helpers.ts';
import { makeCerts, orasPushWasm, startRegistry, type Registry } from './harness.ts';
import { startTokenServer, type TokenServer } from './token-server.ts';
import { BUILD_TIMEOUT_MS, ensureOciTools } from '../support/build-on-use.ts';

let wasm: string;
let certs: Awaited<ReturnType<typeof makeCerts>>;
let basicReg: Registry;
let tokenReg: Registry;
let tokens: TokenServer;
/** Digest-pinned references pushed in beforeAll. */
let basicRef = '';
let tokenRef = '';

const PUSHER = { user: 'ci-pusher', password: 'pusher-secret-3f9a' };
const READER = { user: 'reader', password: 'reader-secret-77c1' };
const STRANGER = { user: 'stranger', password: 'stranger-secret-0b2e' };

function componentDir(): string {
  const d = tmp('oras-');
  copyFileSync(wasm, path.join(d, 'component.wasm'));
  return d;
}

/** A DOCKER_CONFIG folder whose config.json holds `auths` as `docker login` writes them. */
function dockerConfig(auths: Record<string, { user: string; password: string }>, extra: Record<string, unknown> = {}): string {
  const d = tmp('docker-config-');
  writeFileSync(
    path.join(d, 'config.json'),
    JSON.stringify({
      auths: Object.fromEntries(Object.entries(auths).map(([host, c]) => [host, { auth: Buffer.from(`${c.user}:${c.password}`).toString('base64') }])),
      ...extra,
    }),
  );
  return d;
}

function capsule(): string {
  const d = tmp('caps-');
  writeFileSync(path.join(d, 'murmur.yaml'), 'name: c\nversion: 1.0.0\nartifacts:\n  - {name: crashy, version: 1.0.0}\n');
  return d;
}

/** `mur pull` with only the given env (the ambient MURMUR_OCI_* / DOCKER_CONFIG neutralised). */
function pull(ref: string, env: Record<string, string>, dir = capsule()) {
  return mur(['pull', ref, '--capsule', dir, '--version', '1.0.0'], { DOCKER_CONFIG: tmp('no-docker-config-'), ...env });
}

const secretsIn = (s: string) =>
  [PUSHER, READER, STRANGER]
    .map((c) => c.password)
    .concat(basicReg.password!)
    .filter((p) => s.includes(p));

// The registry and oras, built from the Go module proxy on first use (cold: minutes).
beforeAll(ensureOciTools, BUILD_TIMEOUT_MS);
beforeAll(async () => {
  wasm = await watFixture('crash-tool');
  certs = await makeCerts();
  basicReg = await startRegistry({ htpasswd: true, tls: { cert: certs.cert, key: certs.key } });
  tokens = await startTokenServer({
    [PUSHER.user]: { password: PUSHER.password, repos: { 'tools/crashy': ['pull', 'push'] } },
    [READER.user]: { password: READER.password, repos: { 'tools/crashy': ['pull'] } },
    [STRANGER.user]: { password: STRANGER.password, repos: {} },
  });
  tokenReg = await startRegistry({ token: tokens });
  const basicDigest = await orasPushWasm(`${basicReg.host}/tools/crashy:1.0.0`, componentDir(), undefined, [
    '--ca-file',
    certs.ca,
    '-u',
    'docker',
    '-p',
    basicReg.password!,
  ]);
  basicRef = `${basicReg.host}/tools/crashy:1.0.0@${basicDigest}`;
  const tokenDigest = await orasPushWasm(`${tokenReg.host}/tools/crashy:1.0.0`, componentDir(), undefined, [
    '--plain-http',
    '-u',
    PUSHER.user,
    '-p',
    PUSHER.password,
  ]);
  tokenRef = `${tokenReg.host}/tools/crashy:1.0.0@${tokenDigest}`;
});
afterAll(async () => {
  await Promise.all([basicReg?.stop(), tokenReg?.stop(), tokens?.stop()]);
});

describe('basic auth over https with a private CA', () => {
  it('mur pull uses the credentials of Docker config.json auths and the CA of MURMUR_OCI_CA_FILE; nothing secret is printed', async () => {
    const dir = capsule();
    const r = await pull(
      basicRef,
      { DOCKER_CONFIG: dockerConfig({ [basicReg.host]: { user: 'docker', password: basicReg.password! } }), MURMUR_OCI_CA_FILE: certs.ca },
      dir,
    );
    expect(r.code, r.err).toBe(0);
    expect(readLock(dir)!.artifacts).toMatchObject([{ name: 'crashy', version: '1.0.0' }]);
    expect(secretsIn(r.out + r.err)).toEqual([]);
  });

  it('MURMUR_OCI_USERNAME/MURMUR_OCI_PASSWORD work too, and win over config.json', async () => {
    const r = await pull(basicRef, {
      DOCKER_CONFIG: dockerConfig({ [basicReg.host]: { user: 'docker', password: 'not-the-password' } }),
      MURMUR_OCI_USERNAME: 'docker',
      MURMUR_OCI_PASSWORD: basicReg.password!,
      MURMUR_OCI_CA_FILE: certs.ca,
    });
    expect(r.code, r.err).toBe(0);
  });

  it('E-REG-018: without credentials the 401 says what to configure', async () => {
    const r = await pull(basicRef, { MURMUR_OCI_CA_FILE: certs.ca });
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('E-REG-018');
    expect(r.err).toContain(`refused an anonymous request (HTTP 401) to pull from ${basicReg.host}/tools/crashy`);
    expect(r.err).toMatch(/MURMUR_OCI_USERNAME and MURMUR_OCI_PASSWORD, or auths\[".*"\] in .*config\.json/);
    expect(r.out).not.toContain('E-REG-018');
  });

  it('E-REG-018: a wrong password names where the credentials came from, never the password', async () => {
    const cfg = dockerConfig({ [basicReg.host]: { user: 'docker', password: READER.password } });
    const r = await pull(basicRef, { DOCKER_CONFIG: cfg, MURMUR_OCI_CA_FILE: certs.ca });
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('E-REG-018');
    expect(r.err).toContain(`refused the credentials from ${path.join(cfg, 'config.json')} auths["${basicReg.host}"] (HTTP 401)`);
    expect(secretsIn(r.out + r.err)).toEqual([]);
  });

  it('E-REG-020: a certificate from an untrusted CA is refused, naming the fix (no CA given, or another CA)', async () => {
    const env = { DOCKER_CONFIG: dockerConfig({ [basicReg.host]: { user: 'docker', password: basicReg.password! } }) };
    for (const ca of [undefined, certs.otherCa]) {
      const r = await pull(basicRef, { ...env, ...(ca ? { MURMUR_OCI_CA_FILE: ca } : {}) });
      expect(r.code).not.toBe(0);
      expect(r.err).toContain('E-REG-020');
      expect(r.err).toContain(`the TLS certificate of ${basicReg.host} cannot be verified`);
      expect(r.err).toContain('MURMUR_OCI_CA_FILE');
    }
  });
});

describe('Docker token auth (auth: token, JWTs the registry verifies)', () => {
  it('mur pull gets a pull-scoped token from the realm with the config.json credentials', async () => {
    const before = tokens.requests.length;
    const dir = capsule();
    const r = await pull(tokenRef, { DOCKER_CONFIG: dockerConfig({ [`http://${tokenReg.host}`]: READER }) }, dir);
    expect(r.code, r.err).toBe(0);
    expect(readLock(dir)!.artifacts).toMatchObject([{ name: 'crashy', version: '1.0.0' }]);
    expect(tokens.requests.slice(before)).toEqual([{ scope: 'repository:tools/crashy:pull', user: READER.user, status: 200 }]);
    expect(secretsIn(r.out + r.err)).toEqual([]);
  });

  it('staging a source: {oci} artifact (the mur run path) authenticates the same way', async () => {
    const d = tmp('oci-caps-');
    writeFileSync(
      path.join(d, 'murmur.yaml'),
      `name: oci-caps\nversion: 1.0.0\nartifacts:\n  - name: crashy\n    runtime: tool\n    source: {oci: "${tokenRef}"}\n`,
    );
    const saved = { u: process.env.MURMUR_OCI_USERNAME, p: process.env.MURMUR_OCI_PASSWORD };
    Object.assign(process.env, { MURMUR_OCI_USERNAME: READER.user, MURMUR_OCI_PASSWORD: READER.password });
    try {
      const s = await stageCapsule({ capsuleDir: d, registryDir: tmp('reg-'), workRoot: tmp('work-'), cacheDir: tmp('cache-') });
      expect(s.artifacts[0]).toMatchObject({ name: 'crashy', runtime: 'tool' });
    } finally {
      for (const [k, v] of [
        ['MURMUR_OCI_USERNAME', saved.u],
        ['MURMUR_OCI_PASSWORD', saved.p],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('E-REG-018: the token service refuses unknown credentials', async () => {
    const r = await pull(tokenRef, { MURMUR_OCI_USERNAME: READER.user, MURMUR_OCI_PASSWORD: 'wrong-password-5d1' });
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('E-REG-018');
    expect(r.err).toContain(`the token service ${tokens.realm} refused the credentials from MURMUR_OCI_USERNAME/MURMUR_OCI_PASSWORD (HTTP 401)`);
    expect(r.err).not.toContain('wrong-password-5d1');
  });

  it('E-REG-019: a user the token service knows but who has no access to the repository gets 403', async () => {
    const r = await pull(tokenRef, { MURMUR_OCI_USERNAME: STRANGER.user, MURMUR_OCI_PASSWORD: STRANGER.password });
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('E-REG-019');
    expect(r.err).toContain(`denied access (HTTP 403) to pull from ${tokenReg.host}/tools/crashy`);
    expect(r.err).toContain('lack pull permission');
  });

  it('E-REG-019: mur publish --oci with a pull-only user is refused by the registry (insufficient_scope)', async () => {
    const art = tmp('art-');
    writeFileSync(path.join(art, 'murmur.yaml'), 'name: crashy\nversion: 3.0.0\nruntime: tool\n');
    copyFileSync(wasm, path.join(art, 'crashy.wasm'));
    const r = await mur(['publish', art, '--oci', `${tokenReg.host}/tools/crashy`], {
      DOCKER_CONFIG: tmp('no-docker-config-'),
      MURMUR_OCI_USERNAME: READER.user,
      MURMUR_OCI_PASSWORD: READER.password,
    });
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('E-REG-019');
    expect(r.err).toMatch(/the registry denied access \(HTTP 401\) to push to .*\/tools\/crashy .*\(insufficient_scope\)/);
  });
});
