/**
 * The OCI test harness: a real CNCF distribution registry on loopback (storage in a temp folder) and
 * the real oras CLI, both built from the Go module proxy by test/oci/build.sh into .cache/oci/bin
 * (a test file's first beforeAll runs it: ensureOciTools in test/support/build-on-use.ts).
 * Readiness is the registry's own "listening on" log line, not a sleep.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { tmp } from '../registry/helpers.ts';
import { OCI_BIN } from '../support/build-on-use.ts';

export { OCI_BIN };

/** Fails (never skips) when the binaries are missing (ensureOciTools did not run first), saying how to build them. */
export function requireBinaries(): void {
  for (const b of ['registry', 'oras']) {
    if (!existsSync(path.join(OCI_BIN, b))) {
      throw new Error(
        `${path.join(OCI_BIN, b)} is missing: run \`bash test/oci/build.sh\` (builds the CNCF distribution registry and oras from the Go module proxy; the OCI test files' first beforeAll and .ci/run do this)`,
      );
    }
  }
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface Registry {
  host: string;
  storage: string;
  /** htpasswd registries: the password the registry provisioned for user `docker` (it logs it once). */
  password?: string;
  stop(): Promise<void>;
}

export interface RegistryOptions {
  /** Serve https with this certificate and key (PEM files). */
  tls?: { cert: string; key: string };
  /**
   * Basic auth (`auth: htpasswd`): the file is left missing, so the registry provisions it itself
   * with user `docker` and a random bcrypt'd password that it logs (distribution's own behaviour);
   * the harness reads the password from that log line (no bcrypt tool is needed).
   */
  htpasswd?: boolean;
  /** Docker token auth (`auth: token`): the realm of a token server and the JWKS it signs with. */
  token?: { realm: string; service: string; issuer: string; jwks: string };
}

export async function startRegistry(o: RegistryOptions = {}): Promise<Registry> {
  requireBinaries();
  const storage = tmp('oci-storage-');
  const port = await freePort();
  const cfgDir = tmp('oci-config-');
  const config = path.join(cfgDir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: {level: info, formatter: text}',
      'storage:',
      `  filesystem: {rootdirectory: ${storage}}`,
      '  delete: {enabled: true}',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      ...(o.tls ? [`  tls: {certificate: ${o.tls.cert}, key: ${o.tls.key}}`] : []),
      ...(o.htpasswd ? ['auth:', `  htpasswd: {realm: test-registry, path: ${path.join(cfgDir, 'htpasswd')}}`] : []),
      ...(o.token
        ? ['auth:', '  token:', `    realm: ${o.token.realm}`, `    service: ${o.token.service}`, `    issuer: ${o.token.issuer}`, `    jwks: ${o.token.jwks}`]
        : []),
    ].join('\n'),
  );
  const child: ChildProcess = spawn(path.join(OCI_BIN, 'registry'), ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (b: Buffer) => {
      log += b.toString();
      if (/listening on/.test(log)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`registry exited with ${code} before listening:\n${log}`)));
  });
  let password: string | undefined;
  if (o.htpasswd) {
    // logged before "listening on" (the access controller is built at start)
    password = /htpasswd is missing, provisioning with default user.*?password="?([A-Za-z0-9_-]+)"?/.exec(log)?.[1];
    if (!password) throw new Error(`the registry did not log the password it provisioned for its htpasswd file:\n${log}`);
  }
  return {
    host: `127.0.0.1:${port}`,
    storage,
    ...(password ? { password } : {}),
    async stop() {
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
}

/** A CA and a server certificate for 127.0.0.1 signed by it (openssl CLI), as PEM files in a temp dir. */
export async function makeCerts(): Promise<{ ca: string; cert: string; key: string; otherCa: string }> {
  const d = tmp('oci-tls-');
  const ssl = (args: string[]) =>
    run('openssl', args, { cwd: d }).catch((e: Error) => {
      throw new Error(`openssl ${args[0]} failed (is openssl installed? .ci/run installs it): ${e.message}`);
    });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const caExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
  await ssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=capsule-test-ca', ...caExt]);
  await ssl(['req', '-x509', ...ec, '-keyout', 'other.key', '-out', 'other.pem', '-days', '2', '-subj', '/CN=some-other-ca', ...caExt]);
  await ssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(path.join(d, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n');
  await ssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  ]);
  return { ca: path.join(d, 'ca.pem'), cert: path.join(d, 'server.pem'), key: path.join(d, 'server.key'), otherCa: path.join(d, 'other.pem') };
}

const run = promisify(execFile);

/** `oras <args>` in `cwd`; returns stdout. */
export async function oras(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run(path.join(OCI_BIN, 'oras'), args, { cwd, env: { ...process.env, HOME: cwd } });
  return stdout;
}

/** Pushes `component.wasm` (in `dir`) as a Wasm OCI artifact with oras; returns the manifest digest. */
export async function orasPushWasm(ref: string, dir: string, files = ['component.wasm:application/wasm'], flags = ['--plain-http']): Promise<string> {
  writeFileSync(path.join(dir, 'config.json'), '{"architecture":"wasm","os":"wasip2"}');
  const out = await oras(['push', ...flags, '--disable-path-validation', ref, '--config', 'config.json:application/vnd.wasm.config.v0+json', ...files], dir);
  const m = /Digest: (sha256:[0-9a-f]{64})/.exec(out);
  if (!m) throw new Error(`no digest in oras output:\n${out}`);
  return m[1]!;
}
