/**
 * The A2A SDK's schema migrations on the embedded SQLite store, each applied in one transaction
 * with its ledger row.
 *
 * The SDK's runner (`a2a-db upgrade`, @a2a-js/sdk dist/cli/run.js) connects through a plain kysely
 * SqliteDialect, whose adapter says SQLite has no transactional DDL, so kysely's Migrator ran a
 * migration's statements, and then its ledger row, each on its own. A capsule's very first start
 * killed between them (the kubelet killing a pod that starts on a starved node) left `tasks`
 * created but not recorded, and every later start failed "table "tasks" already exists"
 * (E-STORE-002). The runner exports only `run` and builds its own connection, so the migrations are
 * taken from the SDK's offline rendering of them (`a2a-db upgrade --sql --dialect sqlite`: its own
 * SQL for each migration, followed by the ledger row it records) and run through kysely's Migrator
 * on the store's connection, whose dialect has transactional DDL (sqlite-dialect.ts). The ledger
 * and lock tables are the ones the SDK's online upgrade uses, so a store either one migrated is
 * up to date for the other. PostgreSQL keeps the SDK's own runner (store.ts): its adapter has
 * transactional DDL already.
 */
import { sql, type Kysely } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import { MurError, errMessage } from '../../errors.ts';
import { statementsToRun } from './sdk-migration-resume.ts';

/** The SDK's migration runner (the implementation of its `a2a-db` bin): argv, env, output → exit code. */
export type SdkMigrate = (
  argv: string[],
  env: Record<string, string | undefined>,
  output: { log: (...a: unknown[]) => void; error: (...a: unknown[]) => void },
) => Promise<number>;

/** The lock table every store of the SDK's online upgrade shares (its MIGRATION_LOCK_TABLE, named in `a2a-db --help`). */
export const SDK_LOCK_TABLE = 'a2a_migrations_lock';

/** One store of the SDK's schema (push configs, tasks): its ledger table and its migrations in order. */
export interface SdkStoreSchema {
  readonly id: string;
  readonly ledger: string;
  readonly migrations: ReadonlyArray<{ readonly name: string; readonly statements: readonly string[] }>;
}

const STORE_LINE = /^-- store: (\S+)$/;
const LEDGER = /^create table if not exists "([^"]+)" /;
const RECORD = /^insert into "([^"]+)" \("name", "timestamp"\) values \('([^']+)', '[^']*'\)$/;

interface Building {
  id: string;
  ledger?: string;
  migrations: { name: string; statements: string[] }[];
  pending: string[];
  count: number;
}

function finish(store: Building): SdkStoreSchema {
  if (store.ledger === undefined) throw new Error(`store '${store.id}' has no statements`);
  if (store.pending.length > 0) throw new Error(`store '${store.id}' ends with ${store.pending.length} statement(s) no ledger row records`);
  return { id: store.id, ledger: store.ledger, migrations: store.migrations };
}

/**
 * The stores of a script `a2a-db upgrade --sql --dialect sqlite` rendered from base. Its form
 * (run.js renderMigrationScript): comment lines, then per store a `-- store: <id>` line, its
 * ledger's `create table if not exists`, and per migration its statements and then the ledger
 * row `insert into "<ledger>" ("name", "timestamp") values ('<name>', '<time>')`; each statement
 * ends with `;`, and blank lines separate them. Anything else throws, saying where: a store is
 * never migrated from a script read wrong.
 */
export function parseSdkSchema(script: string): SdkStoreSchema[] {
  const stores: SdkStoreSchema[] = [];
  let cur: Building | undefined;
  let n = 0;
  for (const chunk of script.split('\n\n').map((c) => c.trim())) {
    if (chunk === '') continue;
    if (chunk.startsWith('--')) {
      const m = STORE_LINE.exec(chunk);
      if (!m) continue; // the header's notes
      if (cur) stores.push(finish(cur));
      cur = { id: m[1]!, migrations: [], pending: [], count: 0 };
      continue;
    }
    n++;
    if (!cur) throw new Error(`statement ${n} comes before any '-- store:' line`);
    cur.count++;
    const where = `statement ${cur.count} of store '${cur.id}'`;
    if (!chunk.endsWith(';')) throw new Error(`${where} does not end with ';': ${chunk.slice(0, 80)}`);
    const stmt = chunk.slice(0, -1);
    if (cur.ledger === undefined) {
      const m = LEDGER.exec(stmt);
      if (!m) throw new Error(`${where} is not its ledger's 'create table if not exists': ${stmt.slice(0, 80)}`);
      cur.ledger = m[1]!;
      continue;
    }
    const rec = RECORD.exec(stmt);
    if (rec && rec[1] === cur.ledger) {
      if (cur.pending.length === 0) throw new Error(`${where} records migration '${rec[2]}', which has no statement`);
      cur.migrations.push({ name: rec[2]!, statements: cur.pending });
      cur.pending = [];
      continue;
    }
    cur.pending.push(stmt);
  }
  if (cur) stores.push(finish(cur));
  if (stores.length === 0) throw new Error("the script has no '-- store:' block");
  return stores;
}

/** The SDK's schema for SQLite, from its own runner's offline rendering (nothing is read or written). */
export async function renderSdkSchema(run: SdkMigrate): Promise<SdkStoreSchema[]> {
  const logged: string[] = [];
  const errors: string[] = [];
  const rc = await run(
    ['upgrade', '--sql', '--dialect', 'sqlite'],
    {},
    {
      log: (...a) => logged.push(a.map(String).join(' ')),
      error: (...a) => errors.push(a.map(errMessage).join(' ')),
    },
  );
  if (rc !== 0) throw new Error(`a2a-db upgrade --sql exited ${rc}: ${errors.join('; ')}`);
  try {
    return parseSdkSchema(logged.join('\n'));
  } catch (e) {
    throw new Error(`a2a-db upgrade --sql --dialect sqlite is not in the form the runtime applies: ${errMessage(e)}`, { cause: e });
  }
}

/**
 * Bring the store's database up to the SDK's latest schema. `db` must be the store's own Kysely
 * (StoreSqliteDialect): the Migrator then runs the pending migrations of each store and their
 * ledger rows in one transaction, which SQLite's journal rolls back if the process dies in it.
 * `file`: the store's file, named by a refusal. A migration an older runtime's first start left
 * half-done is taken up where it stopped, or refused (E-STORE-006): sdk-migration-resume.ts.
 */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the SDK's
export async function migrateSdkSchema(db: Kysely<any>, stores: readonly SdkStoreSchema[], file: string): Promise<void> {
  if (!db.getExecutor().adapter.supportsTransactionalDdl)
    throw new Error("the SDK's migrations need the store's dialect, with transactional DDL (sqlite-dialect.ts)");
  for (const store of stores) {
    const migrations: Record<string, Migration> = {};
    for (const [i, m] of store.migrations.entries()) {
      migrations[m.name] = {
        // Raw: the SDK's own SQL, run on the Migrator's transaction, one statement at a time.
        async up(trx) {
          for (const s of await statementsToRun(trx, store, i, file)) await sql.raw(s).execute(trx);
        },
      };
    }
    const { error, results } = await new Migrator({
      db,
      provider: { getMigrations: async () => migrations },
      migrationTableName: store.ledger,
      migrationLockTableName: SDK_LOCK_TABLE,
    }).migrateToLatest();
    if (error !== undefined) {
      if (error instanceof MurError) throw error;
      const failed = results?.find((r) => r.status === 'Error');
      // Worded as the SDK's runner words it (its throwOnFailure).
      throw new Error(`store "${store.id}" migration failed${failed ? ` in migration "${failed.migrationName}"` : ''}: ${errMessage(error)}`, {
        cause: error,
      });
    }
  }
}
