/**
 * The tables of ours next to the SDK's in the store's database, created by Kysely migrations with
 * their own ledger (`murmur_migrations`), as the SDK does for its own tables:
 * - `murmur_conversation`: the conversation record, one row per message (conversation-table.ts);
 * - `murmur_task_runner`: which replica runs each task (task-runners.ts), so another replica knows
 *   where to send a cancel, an input reply or a resubscribe, and whether that replica is alive.
 * Migrations are append-only: a database migrated by an older runtime moves forward unchanged.
 */
import type { Kysely } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';

export const CONVERSATION_TABLE = 'murmur_conversation';
export const RUNNER_TABLE = 'murmur_task_runner';

const MIGRATIONS: Record<string, Migration> = {
  '0001_create_conversation': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
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
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable(RUNNER_TABLE)
        .addColumn('task_id', 'varchar(255)', (c) => c.notNull().primaryKey())
        .addColumn('replica', 'varchar(64)', (c) => c.notNull())
        .execute();
    },
  },
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function migrateMurmur(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    migrationTableName: 'murmur_migrations',
    migrationLockTableName: 'murmur_migrations_lock',
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
