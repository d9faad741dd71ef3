/**
 * The first connection to a PostgreSQL store is retried while the failure says "not yet" (a pod
 * whose DNS, policy or database server is still coming up), and fails at once when it says
 * "never" (runtime/a2a/store/store-connect.ts). On a real PostgreSQL server started late.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openStore, type DurableStore } from '../../runtime/a2a/store/store.ts';
import { connectBackoffMs, connectBudgetSecs, transientConnectError } from '../../runtime/a2a/store/store-connect.ts';
import { freePort } from '../cli/serve-kit.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';

const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
});

describe('store connection policy (table)', () => {
  it.each([
    [{ code: 'EAI_AGAIN', message: 'getaddrinfo EAI_AGAIN postgres.ns.svc' }, true],
    [{ code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND postgres' }, true],
    [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.0.0.1:5432' }, true],
    [{ code: 'EHOSTUNREACH' }, true],
    [{ code: '57P03', message: 'the database system is starting up' }, true],
    [new Error('timeout expired'), true],
    [new Error('Connection terminated due to connection timeout'), true],
    [Object.assign(new AggregateError([{ code: 'ECONNREFUSED' }, { code: 'ECONNREFUSED' }]), {}), true],
    [{ code: '28P01', message: 'password authentication failed for user "murmur"' }, false],
    [{ code: '3D000', message: 'database "nodb" does not exist' }, false],
    [{ code: '28000', message: 'no pg_hba.conf entry' }, false],
    [new Error('some other failure'), false],
    [undefined, false],
  ])('%o → transient %s', (e, want) => {
    expect(transientConnectError(e)).toBe(want);
  });

  it('backs off from 250 ms, doubling, at most 4 s; waits 30 s by default (MURMUR_STORE_CONNECT_SECS)', () => {
    expect([1, 2, 3, 4, 5, 6, 9].map(connectBackoffMs)).toEqual([250, 500, 1000, 2000, 4000, 4000, 4000]);
    expect(connectBudgetSecs({})).toBe(30);
    expect(connectBudgetSecs({ MURMUR_STORE_CONNECT_SECS: '90' })).toBe(90);
    expect(connectBudgetSecs({ MURMUR_STORE_CONNECT_SECS: '0' })).toBe(0);
    expect(connectBudgetSecs({ MURMUR_STORE_CONNECT_SECS: 'soon' })).toBe(30);
  });
});

describe('opening a PostgreSQL store', () => {
  it('waits for a server that is not up yet, and opens once it is', async () => {
    const port = await freePort();
    let server: Postgres | undefined;
    let starting: Promise<Postgres> | undefined;
    const retries: unknown[] = [];
    const store: DurableStore = await openStore(`postgresql://murmur@127.0.0.1:${port}/postgres`, undefined, {
      connectSecs: 120,
      onRetry: (r) => {
        retries.push(r.error);
        // The first refusal is the cue to start the server on that port.
        starting ??= startPostgres({ port }).then((s) => (server = s));
      },
    });
    cleanup.push(
      async () => server?.stop(),
      async () => store.close(),
    );
    await starting;
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect((retries[0] as { code?: string }).code).toBe('ECONNREFUSED');
    expect(store.kind).toBe('postgres');
    // Migrated and answering: the SDK's task table is there, empty.
    expect((await sql<{ n: string }>`SELECT count(*) AS n FROM tasks`.execute(store.db)).rows[0]!.n).toBe('0');
  }, 180_000);

  it('fails at once, without retrying, when the server says the database does not exist (E-STORE-002)', async () => {
    const server = await startPostgres();
    cleanup.push(() => server.stop());
    const retries: unknown[] = [];
    const err = await openStore(`postgresql://murmur@127.0.0.1:${server.port}/nodb`, undefined, { connectSecs: 60, onRetry: (r) => retries.push(r) }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'E-STORE-002', message: expect.stringMatching(/cannot connect: .*nodb/) });
    expect(retries).toEqual([]);
  }, 120_000);

  it('gives up when its budget is spent, saying how many attempts it made (E-STORE-002)', async () => {
    const port = await freePort();
    const retries: unknown[] = [];
    const err = await openStore(`postgresql://murmur@127.0.0.1:${port}/postgres`, undefined, { connectSecs: 1, onRetry: (r) => retries.push(r) }).catch(
      (e: unknown) => e,
    );
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(err).toMatchObject({ code: 'E-STORE-002', message: expect.stringContaining(`cannot connect (${retries.length + 1} attempts over 1 s)`) });
    expect((err as Error).message).toContain('ECONNREFUSED');
  });
});

describe('a PostgreSQL store whose connections the server ends', () => {
  it('keeps the process up when the server ends its idle connections, says so on stderr, and the next query opens another', async () => {
    const pg = await startPostgres();
    cleanup.push(() => pg.stop());
    const url = await pg.url('murmur_store_idle_end');
    const store = await openStore(url);
    cleanup.push(() => store.close());
    await sql`SELECT 1`.execute(store.db);
    let heard!: (line: string) => void;
    const saidSo = new Promise<string>((r) => (heard = r));
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      if (/^store: an idle PostgreSQL connection ended/.test(String(chunk))) heard(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stderr.write;
    try {
      const admin = await pg.admin('murmur_store_idle_end');
      const ended = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'murmur_store_idle_end' AND pid <> pg_backend_pid()",
      );
      await admin.end();
      expect(ended.rowCount).toBeGreaterThan(0);
      // The pool hears the end (its 'error' event) and drops that connection; the next query works.
      expect(await saidSo).toMatch(/terminating connection due to administrator command\); the next query opens another/);
      expect((await sql<{ n: number }>`SELECT 2 AS n`.execute(store.db)).rows).toEqual([{ n: 2 }]);
    } finally {
      process.stderr.write = write;
    }
  }, 120_000);
});
