/**
 * The durable store behind `mur serve`: tasks and push configs in the A2A SDK's own
 * `DatabaseTaskStore` / `DatabasePushNotificationStore` (Kysely), on an embedded SQLite file by
 * default (better-sqlite3: no server to run; the file lives on the session volume) or on a
 * PostgreSQL server given by URL. The schema is the SDK's: its `a2a-db upgrade` migrations are run
 * in-process at open (idempotent, with the SDK's ledger), so a later SDK schema change migrates the
 * same way the SDK's own CLI would; on SQLite each lands with its ledger row or not at all
 * (sdk-migrations.ts). No persistence code of our own beyond the start-up sweep below, and, on
 * SQLite, the SDK's task save run as one SQL text compiled once (sqlite-task-store.ts).
 *
 * Start-up sweep: a task that was not final when the previous process died (kill -9, OOM, node
 * loss) can never finish, so it is marked `failed` with a reason saying the runtime restarted. The
 * rewrite goes through the SDK store (load + save), scoped to the task's own owner and tenant.
 */
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kysely, PostgresDialect } from 'kysely';
import { StoreSqliteDialect } from './sqlite-dialect.ts';
import type { PushNotificationStore, TaskStore } from '@a2a-js/sdk/server';
import { DatabasePushNotificationStore, DatabaseTaskStore, TASK_TABLE } from '@a2a-js/sdk/server/database';
import { failOrphans } from './task-runners.ts';
import { SqliteTaskStore } from './sqlite-task-store.ts';
import { errMessage, isMurError, MurError } from '../../errors.ts';
import { holdSecret } from '../../secrets.ts';
import { conversationTable } from './conversation-table.ts';
import { migrateMurmur } from './murmur-schema.ts';
import { migrateSdkSchema, renderSdkSchema, type SdkMigrate, type SdkStoreSchema } from './sdk-migrations.ts';
import { cachedStatements, type CachedStatements } from './sqlite-statements.ts';
import { connectBudgetSecs, withConnectRetries, type RetryReport } from './store-connect.ts';
import type { ConversationStore } from '../../inference/conversation-store.ts';

export type StoreKind = 'sqlite' | 'postgres';

export interface DurableStore {
  readonly kind: StoreKind;
  /** Where it is, without credentials: the SQLite file, or host/database of the server. */
  readonly where: string;
  // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
  readonly db: Kysely<any>;
  readonly tasks: TaskStore;
  readonly push: PushNotificationStore;
  /** The conversation record and threaded histories, in a table of ours next to the SDK's. */
  readonly conversations: ConversationStore;
  /** The SQLite store's prepared-statement cache (sqlite-statements.ts); absent for PostgreSQL. */
  readonly statements?: CachedStatements;
  /** Milliseconds from open() to a migrated, usable store. */
  readonly openMs: number;
  close(): Promise<void>;
}

/** The store a `--store` value names: `sqlite:<file>`, a bare file path, or `postgres(ql)://…`. */
export function parseStoreUrl(value: string, cwd = process.cwd()): { kind: StoreKind; url: string; where: string } {
  const v = value.trim();
  if (/^postgres(ql)?:\/\//i.test(v)) {
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      throw new MurError('E-STORE-001', `store URL is not a URL: ${redact(v)}`, { hint: 'postgresql://user:password@host:5432/database' });
    }
    // Held for redaction (secrets.ts): a driver error quoting the URL reaches no output.
    holdSecret(u.password);
    try {
      holdSecret(decodeURIComponent(u.password));
    } catch {
      // a stray % stays as written: the verbatim form is held
    }
    return { kind: 'postgres', url: v, where: `postgresql://${u.host}${u.pathname}` };
  }
  let file = v.startsWith('sqlite:') ? v.slice('sqlite:'.length).replace(/^\/\//, '') : v;
  if (file === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(file)) {
    throw new MurError('E-STORE-001', `store '${redact(v)}' is neither a SQLite file nor a PostgreSQL URL`, {
      hint: '--store sqlite:/var/lib/murmur/store.db, --store ./store.db, or --store postgresql://host/db',
    });
  }
  file = isAbsolute(file) ? file : resolve(cwd, file);
  return { kind: 'sqlite', url: `sqlite:${file}`, where: file };
}

function redact(s: string): string {
  return s.replace(/\/\/([^@/]*)@/, '//***@');
}

/**
 * The SDK's migration runner (the implementation of its `a2a-db` bin). The package exports no
 * subpath for it, so it is found next to the database entry point; running it in-process saves a
 * second Node start (≈ 0.3 s) on every `mur serve`.
 */
async function sdkMigrate(): Promise<SdkMigrate> {
  const req = createRequire(import.meta.url);
  const entry = req.resolve('@a2a-js/sdk/server/database');
  const run = join(dirname(entry), '..', '..', 'cli', 'run.js');
  const mod = (await import(pathToFileURL(run).href)) as { run?: SdkMigrate };
  if (typeof mod.run !== 'function') throw new Error(`@a2a-js/sdk has no migration runner at ${run}`);
  return mod.run;
}

/**
 * better-sqlite3 is a native addon: an install that skipped its build (npm ci --ignore-scripts)
 * has the package but no engine. Said as its own code so `mur serve` can tell that apart.
 */
async function sqliteEngine(): Promise<void> {
  try {
    const { default: Database } = await import('better-sqlite3');
    new Database(':memory:').close();
  } catch (e) {
    throw new MurError('E-STORE-004', `the embedded SQLite engine (better-sqlite3) cannot be loaded: ${errMessage(e)}`, {
      hint: 'install without --ignore-scripts so its native addon is built, or give --store postgresql://… or --store memory',
      cause: e,
    });
  }
}

async function migrationLock(url: string, budgetSecs: number, onRetry: (r: RetryReport) => void): Promise<() => Promise<void>> {
  const { default: pg } = await import('pg');
  const c = await withConnectRetries(
    async () => {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
      try {
        await client.connect();
        return client;
      } catch (e) {
        await client.end().catch(() => undefined);
        throw e;
      }
    },
    budgetSecs,
    onRetry,
  );
  await c.query('SELECT pg_advisory_lock($1::int, 0)', [0x4d555232]);
  return async () => {
    await c.end().catch(() => undefined);
  };
}

export interface OpenStoreOptions {
  /** Seconds to keep retrying a PostgreSQL server that is not reachable yet (default MURMUR_STORE_CONNECT_SECS or 30). */
  connectSecs?: number;
  /** Told of each retry of that first connection (mur serve prints it). */
  onRetry?: (r: RetryReport) => void;
}

type StoreSpec = ReturnType<typeof parseStoreUrl>;
type Fail = (what: string, e: unknown, hint: string) => MurError;
const SQLITE_HINT = 'the file must be a SQLite database on a writable volume';

/**
 * The SQLite file on the store's one connection, migrated to the SDK's schema on that connection
 * (sdk-migrations.ts: each migration in a transaction with its ledger row).
 */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
async function openSqlite(spec: StoreSpec, schema: readonly SdkStoreSchema[], fail: Fail): Promise<{ db: Kysely<any>; statements: CachedStatements }> {
  const { default: Database } = await import('better-sqlite3');
  let file: InstanceType<typeof Database> | undefined;
  try {
    file = new Database(spec.where);
    // WAL: a task save is one small write; readers (tasks/get, ListTasks) never wait on it.
    file.pragma('journal_mode = WAL');
    file.pragma('synchronous = NORMAL');
    file.pragma('busy_timeout = 5000');
  } catch (e) {
    file?.close();
    throw fail('cannot open it', e, SQLITE_HINT);
  }
  // Each SQL text compiled once, not per query (sqlite-statements.ts).
  const statements = cachedStatements(file);
  const db = new Kysely({ dialect: new StoreSqliteDialect({ database: statements }) });
  try {
    await migrateSdkSchema(db, schema, spec.where);
  } catch (e) {
    await db.destroy().catch(() => undefined);
    // A half-migrated store it will not take up (E-STORE-006) says so itself.
    if (isMurError(e)) throw e;
    throw fail('schema migration failed', e, SQLITE_HINT);
  }
  return { db, statements };
}

/**
 * PostgreSQL: the SDK's own runner migrates (transactional DDL there). Replicas of one capsule
 * start together on one store: their migrations take turns under one advisory lock ('MUR2', 0),
 * held on a connection of its own for the migration's length.
 */
async function migratePostgres(spec: StoreSpec, migrate: SdkMigrate, opts: OpenStoreOptions, fail: Fail): Promise<void> {
  const errors: string[] = [];
  const budget = opts.connectSecs ?? connectBudgetSecs();
  const release = await migrationLock(spec.url, budget, opts.onRetry ?? (() => undefined)).catch((e: unknown) => {
    const n = (e as { attempts?: number }).attempts ?? 1;
    return Promise.reject(
      fail(
        n > 1 ? `cannot connect (${n} attempts over ${budget} s)` : 'cannot connect',
        e,
        'check the URL, the credentials and that the server is up (MURMUR_STORE_CONNECT_SECS sets how long to wait for it)',
      ),
    );
  });
  const rc = await migrate(
    ['upgrade', '--url', spec.url],
    {},
    {
      log: () => undefined,
      error: (...a) => errors.push(a.map((x) => errMessage(x)).join(' ')),
    },
  ).catch((e: unknown) => {
    errors.push(errMessage(e));
    return 1;
  });
  await release();
  if (rc !== 0) {
    throw fail(
      'schema migration failed',
      new Error(errors.join('; ') || `a2a-db upgrade exited ${rc}`),
      'check the URL, the credentials and that the server is up',
    );
  }
}

// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
async function openPostgres(spec: StoreSpec): Promise<Kysely<any>> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: spec.url, max: 10, connectionTimeoutMillis: 10_000 });
  // An idle connection the server ends (a restart, a failover, pg_terminate_backend) is an
  // 'error' event on the pool; unheard, it would stop the process. The pool drops that
  // connection and the next query opens another.
  pool.on('error', (e) => process.stderr.write(`store: an idle PostgreSQL connection ended (${e.message}); the next query opens another\n`));
  return new Kysely({ dialect: new PostgresDialect({ pool }) });
}

/** Open (creating and migrating as needed) the store `value` names. */
export async function openStore(value: string, cwd?: string, opts: OpenStoreOptions = {}): Promise<DurableStore> {
  const t0 = performance.now();
  const spec = parseStoreUrl(value, cwd);
  const fail: Fail = (what, e, hint) =>
    new MurError('E-STORE-002', `cannot open the ${spec.kind} store ${spec.where}: ${what}: ${errMessage(e)}`, { hint, cause: e });
  if (spec.kind === 'sqlite') {
    try {
      mkdirSync(dirname(spec.where), { recursive: true });
    } catch (e) {
      throw fail('cannot create its folder', e, 'give --store a path on a writable volume');
    }
    await sqliteEngine();
  }
  const unloadable = (e: unknown) =>
    new MurError('E-STORE-004', `the A2A SDK's schema migrations (@a2a-js/sdk a2a-db) cannot be loaded: ${errMessage(e)}`, {
      hint: 'the runtime needs node_modules/@a2a-js/sdk/dist/cli beside it, from an @a2a-js/sdk version it supports; or give --store memory',
      cause: e,
    });
  const migrate = await sdkMigrate().catch((e: unknown) => Promise.reject(unloadable(e)));
  // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
  let db: Kysely<any>;
  let statements: CachedStatements | undefined;
  if (spec.kind === 'sqlite') {
    const schema = await renderSdkSchema(migrate).catch((e: unknown) => Promise.reject(unloadable(e)));
    ({ db, statements } = await openSqlite(spec, schema, fail));
  } else {
    await migratePostgres(spec, migrate, opts, fail);
    db = await openPostgres(spec);
  }
  try {
    await db
      .selectFrom(TASK_TABLE)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
  } catch (e) {
    await db.destroy().catch(() => undefined);
    throw fail('first query failed', e, 'the store must have been migrated (a2a-db upgrade) and be readable');
  }
  try {
    await migrateMurmur(db, spec.kind);
  } catch (e) {
    await db.destroy().catch(() => undefined);
    throw fail('conversation table migration failed', e, 'the store must be writable');
  }
  const openMs = performance.now() - t0;
  return {
    kind: spec.kind,
    where: spec.where,
    db,
    tasks: spec.kind === 'sqlite' ? new SqliteTaskStore(db) : new DatabaseTaskStore(db),
    push: new DatabasePushNotificationStore(db),
    conversations: conversationTable(db, spec.kind),
    ...(statements ? { statements } : {}),
    openMs,
    close: () => db.destroy(),
  };
}

/**
 * Mark every task that is not final `failed` with `reason` (start-up: whoever ran it is gone).
 * With `alive` (replicas on a shared store), only tasks whose runner replica is gone: the others
 * are still running elsewhere. Returns how many. See task-runners.ts.
 */
export async function failUnfinished(store: DurableStore, reason: string, alive?: (replica: string) => Promise<boolean>): Promise<number> {
  return failOrphans(store.db, reason, alive ? { alive } : {});
}
