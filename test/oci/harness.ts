/**
 * The OCI test harness: a real CNCF distribution registry on loopback (storage in a temp folder) and
 * the real oras CLI, both built from the Go module proxy by test/oci/build.sh into .cache/oci/bin.
 * Readiness is the registry's own "listening on" log line, not a sleep.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../registry/helpers.ts';

export const OCI_BIN = process.env.OCI_BIN_DIR ?? path.join(PROJECT_ROOT, '.cache', 'oci', 'bin');

/** Fails (never skips) when the binaries are missing, saying how to build them. */
export function requireBinaries(): void {
  for (const b of ['registry', 'oras']) {
    if (!existsSync(path.join(OCI_BIN, b))) {
      throw new Error(`${path.join(OCI_BIN, b)} is missing: run \`bash test/oci/build.sh\` (builds the CNCF distribution registry and oras from the Go module proxy; .ci/run does this)`);
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
  stop(): Promise<void>;
}

export async function startRegistry(): Promise<Registry> {
  requireBinaries();
  const storage = tmp('oci-storage-');
  const port = await freePort();
  const config = path.join(tmp('oci-config-'), 'config.yml');
  writeFileSync(config, [
    'version: 0.1',
    'log: {level: info, formatter: text}',
    'storage:',
    `  filesystem: {rootdirectory: ${storage}}`,
    '  delete: {enabled: true}',
    'http:',
    `  addr: 127.0.0.1:${port}`,
  ].join('\n'));
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
  return {
    host: `127.0.0.1:${port}`,
    storage,
    async stop() {
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
}

const run = promisify(execFile);

/** `oras <args>` in `cwd`; returns stdout. */
export async function oras(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run(path.join(OCI_BIN, 'oras'), args, { cwd, env: { ...process.env, HOME: cwd } });
  return stdout;
}

/** Pushes `component.wasm` (in `dir`) as a Wasm OCI artifact with oras; returns the manifest digest. */
export async function orasPushWasm(ref: string, dir: string, files = ['component.wasm:application/wasm']): Promise<string> {
  writeFileSync(path.join(dir, 'config.json'), '{"architecture":"wasm","os":"wasip2"}');
  const out = await oras(['push', '--plain-http', '--disable-path-validation', ref, '--config', 'config.json:application/vnd.wasm.config.v0+json', ...files], dir);
  const m = /Digest: (sha256:[0-9a-f]{64})/.exec(out);
  if (!m) throw new Error(`no digest in oras output:\n${out}`);
  return m[1]!;
}
