/**
 * A real PostgreSQL server for tests (Debian's `postgresql` package; .ci/run installs it): a fresh
 * cluster in a temp folder, owned by the `postgres` user (initdb refuses root), trust
 * authentication for the test role over the server's Unix socket and loopback. Started as a child
 * process and ready when the server says so on stderr; stopped by its pid (fast shutdown).
 *
 * By default it listens on a free loopback port. With `netns` it runs inside that network
 * namespace (entered with nsenter, which then drops to the postgres user) listening on `listen`
 * (an address of that namespace) and `port`: the real node's pods reach it there
 * (test/realnode/host-services.ts). Its Unix socket lives in its folder, which every mount
 * namespace of this machine sees, so the test process still reaches it (`admin()`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { freePort } from '../cli/serve-kit.ts';

export interface PostgresOptions {
  /** Network namespace to run in (`ip netns` name); default: this process's. */
  netns?: string;
  /** Address to listen on (default 127.0.0.1). */
  listen?: string;
  /** Port (default: a free loopback port; required with `netns`, whose ports this process cannot probe). */
  port?: number;
  /** Folder to make the cluster's folder in (default: /tmp as root, else the temp dir). */
  parent?: string;
  /** Lines appended to pg_hba.conf, e.g. `host all all 10.244.0.0/16 scram-sha-256`. */
  hba?: string[];
}

export interface Postgres {
  /** `postgresql://murmur@<listen>:<port>/<db>` for a database created on first use. */
  url(db: string): Promise<string>;
  /** A client of database `db` over the Unix socket (created on first use), connected; `end()` it. */
  admin(db?: string): Promise<pg.Client>;
  /** The cluster's folder (data directory and Unix socket), removed by stop(). */
  dir: string;
  port: number;
  pid: number;
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
  if (r.status !== 0 || g.status !== 0)
    throw new Error('running as root and there is no postgres user to run the server as (apt-get install postgresql creates it)');
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export async function startPostgres(o: PostgresOptions = {}): Promise<Postgres> {
  const bin = binDir();
  const user = pgUser();
  if (o.netns && o.port === undefined) throw new Error('startPostgres: a port is required with netns');
  // Not under the test run's TMPDIR: that folder is root's alone (0700) and the server runs as postgres.
  const dir = mkdtempSync(join(o.parent ?? (user ? '/tmp' : tmpdir()), 'murmur-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'murmur', '--no-sync'], { encoding: 'utf8', ...(user ?? {}) });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}): ${init.stderr}`);
  }
  if (o.hba?.length) appendFileSync(join(data, 'pg_hba.conf'), `${o.hba.join('\n')}\n`);
  const port = o.port ?? (await freePort());
  const listen = o.listen ?? '127.0.0.1';
  const args = ['-D', data, '-k', dir, '-h', listen, '-p', String(port), '-c', 'fsync=off'];
  // nsenter enters the namespace as root, then becomes the postgres user (no fork: the pid is the server's).
  const proc: ChildProcess = o.netns
    ? spawn(
        'nsenter',
        [`--net=/run/netns/${o.netns}`, ...(user ? [`--setuid=${user.uid}`, `--setgid=${user.gid}`] : []), '--', join(bin, 'postgres'), ...args],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      )
    : spawn(join(bin, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
  let log = '';
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  try {
    await new Promise<void>((resolve, reject) => {
      proc.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        if (/ready to accept connections/.test(log)) resolve();
      });
      void exited.then(() => reject(new Error(`postgres exited before it was ready:\n${log}`)));
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const made = new Set<string>(['postgres']);
  const admin = async (db = 'postgres'): Promise<pg.Client> => {
    const { default: pgm } = await import('pg');
    if (!made.has(db)) {
      const c = new pgm.Client({ host: dir, port, user: 'murmur', database: 'postgres' });
      await c.connect();
      await c.query(`CREATE DATABASE "${db.replace(/"/g, '')}"`);
      await c.end();
      made.add(db);
    }
    const c = new pgm.Client({ host: dir, port, user: 'murmur', database: db });
    await c.connect();
    return c;
  };
  const base = `postgresql://murmur@${listen}:${port}`;
  return {
    dir,
    port,
    pid: proc.pid!,
    admin,
    async url(db) {
      if (!made.has(db)) await (await admin(db)).end();
      return `${base}/${db}`;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        // SIGINT: PostgreSQL's fast shutdown, which disconnects the clients (SIGTERM's smart
        // shutdown waits for every client to leave: pods still connected would hold it forever).
        proc.kill('SIGINT');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
