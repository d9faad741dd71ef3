/**
 * A real PostgreSQL server for tests (Debian's `postgresql` package; .ci/run installs it): a fresh
 * cluster in a temp folder, owned by the `postgres` user (initdb refuses root), listening on a free
 * loopback port, trust authentication for the test role. Started as a child process and ready when
 * the server says so on stderr; stopped by its pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../cli/serve-kit.ts';

export interface Postgres {
  /** `postgresql://murmur@127.0.0.1:<port>/<db>` for a database created on first use. */
  url(db: string): Promise<string>;
  stop(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const bin = versions.map((v) => join(root, v, 'bin')).find((d) => existsSync(join(d, 'postgres')));
  if (!bin) throw new Error(`PostgreSQL is not installed (no ${root}/<version>/bin/postgres): apt-get install postgresql (.ci/run does)`);
  return bin;
}

function pgUser(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined; // not root: run as ourselves
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) throw new Error('running as root and there is no postgres user to run the server as (apt-get install postgresql creates it)');
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export async function startPostgres(): Promise<Postgres> {
  const bin = binDir();
  const user = pgUser();
  // Not under the test run's TMPDIR: that folder is root's alone (0700) and the server runs as postgres.
  const dir = mkdtempSync(join(user ? '/tmp' : tmpdir(), 'murmur-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'murmur', '--no-sync'], { encoding: 'utf8', ...(user ?? {}) });
  if (init.status !== 0) throw new Error(`initdb failed (${init.status}): ${init.stderr}`);
  const port = await freePort();
  const proc: ChildProcess = spawn(join(bin, 'postgres'), ['-D', data, '-k', dir, '-h', '127.0.0.1', '-p', String(port), '-c', 'fsync=off'], { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
  let log = '';
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    proc.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      if (/ready to accept connections/.test(log)) resolve();
    });
    void exited.then(() => reject(new Error(`postgres exited before it was ready:\n${log}`)));
  });
  const made = new Set<string>();
  const base = `postgresql://murmur@127.0.0.1:${port}`;
  return {
    async url(db) {
      if (!made.has(db)) {
        const { default: pg } = await import('pg');
        const c = new pg.Client({ connectionString: `${base}/postgres` });
        await c.connect();
        await c.query(`CREATE DATABASE "${db.replace(/"/g, '')}"`);
        await c.end();
        made.add(db);
      }
      return `${base}/${db}`;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
