/**
 * The tables of ours next to the SDK's in the store's database, created by Kysely migrations with
 * their own ledger (`murmur_migrations`), as the SDK does for its own tables:
 * - `murmur_conversation`: the conversation record, one row per message (conversation-table.ts),
 *   each the message of one caller (`tenant`, `owner`: the SDK task table's owner scope);
 * - `murmur_task_runner`: which replica runs each task (task-runners.ts), so another replica knows
 *   where to send a cancel, an input reply or a resubscribe, and whether that replica is alive;
 * - `murmur_resume_point`: what the executor of a task waiting for input needs to continue it in
 *   another process (resume-points.ts), while the task waits.
 * Migrations are append-only: a database migrated by an older runtime moves forward unchanged.
 */
import { sql, type Kysely } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import { TASK_TABLE } from '@a2a-js/sdk/server/database';

export const CONVERSATION_TABLE = 'murmur_conversation';
export const RUNNER_TABLE = 'murmur_task_runner';
export const RESUME_TABLE = 'murmur_resume_point';

export type StoreDialect = 'sqlite' | 'postgres';

/** Byte-exact comparison of names, as the SDK's own tables compare theirs (its COLLATION table). */
const COLLATE: Record<StoreDialect, string> = { postgres: 'collate "C"', sqlite: 'collate binary' };

/**
 * Existing rows get the owner of the SDK's tasks in their context when those tasks all have one
 * owner (tenant and user), the caller who ran them. A context whose tasks had several owners
 * (callers shared it while conversations were keyed by context alone: its rows cannot be told
 * apart) or has no task left is the NO_CALLER owner ('', ''), which no A2A caller ever is: those
 * rows stay in the record and no caller's threaded task continues them.
 */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
async function attributeRows(db: Kysely<any>, dialect: StoreDialect): Promise<void> {
  const c = sql.raw(COLLATE[dialect]);
  const conv = sql.table(CONVERSATION_TABLE);
  const tasks = sql.table(TASK_TABLE);
  const same = sql`t.context_id ${c} = ${conv}.context_id ${c}`;
  await sql`UPDATE ${conv} SET
      tenant = (SELECT min(t.tenant) FROM ${tasks} t WHERE ${same}),
      owner = (SELECT min(t.owner) FROM ${tasks} t WHERE ${same})
    WHERE (SELECT count(DISTINCT t.tenant) FROM ${tasks} t WHERE ${same}) = 1
      AND (SELECT count(DISTINCT t.owner) FROM ${tasks} t WHERE ${same}) = 1`.execute(db);
}

const migrations = (dialect: StoreDialect): Record<string, Migration> => ({
  '0001_create_conversation': {
    // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
    async up(db: Kysely<any>) {
      await db.schema
        .createTable(CONVERSATION_TABLE)
        .addColumn('seq', 'bigint', (c) => c.notNull().primaryKey())
        .addColumn('context_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('bytes', 'integer', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex(`${CONVERSATION_TABLE}_context_idx`).on(CONVERSATION_TABLE).columns(['context_id', 'seq']).execute();
    },
  },
  '0002_create_task_runner': {
    // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
    async up(db: Kysely<any>) {
      await db.schema
        .createTable(RUNNER_TABLE)
        .addColumn('task_id', 'varchar(255)', (c) => c.notNull().primaryKey())
        .addColumn('replica', 'varchar(64)', (c) => c.notNull())
        .execute();
    },
  },
  '0003_conversation_owner': {
    // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
    async up(db: Kysely<any>) {
      const name = sql.raw(`varchar(255) ${COLLATE[dialect]}`);
      for (const col of ['tenant', 'owner']) {
        await db.schema
          .alterTable(CONVERSATION_TABLE)
          .addColumn(col, name, (c) => c.notNull().defaultTo(''))
          .execute();
      }
      await attributeRows(db, dialect);
      // A threaded history is read by owner and context: the index leads with both.
      await db.schema.dropIndex(`${CONVERSATION_TABLE}_context_idx`).execute();
      await db.schema.createIndex(`${CONVERSATION_TABLE}_owner_context_idx`).on(CONVERSATION_TABLE).columns(['tenant', 'owner', 'context_id', 'seq']).execute();
    },
  },
  '0004_create_resume_point': {
    // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
    async up(db: Kysely<any>) {
      await db.schema
        .createTable(RESUME_TABLE)
        .addColumn('task_id', 'varchar(255)', (c) => c.notNull().primaryKey())
        // When the task asked (ms since the epoch): its input timeout counts from here in any process.
        .addColumn('asked_at', 'bigint', (c) => c.notNull())
        .addColumn('bytes', 'integer', (c) => c.notNull())
        .addColumn('point', 'text', (c) => c.notNull())
        .execute();
    },
  },
});

/** Migrate to the latest schema, or up to `target` (a migration's name: tests build a store as an older runtime left it). */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
export async function migrateMurmur(db: Kysely<any>, dialect: StoreDialect, target?: string): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations(dialect) },
    migrationTableName: 'murmur_migrations',
    migrationLockTableName: 'murmur_migrations_lock',
  });
  const { error } = target === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
