/**
 * The embedded store's Kysely dialect: Kysely's SqliteDialect, with migrations in a transaction.
 *
 * SQLite runs DDL inside transactions like any other statement, but Kysely's SqliteAdapter says it
 * does not (`supportsTransactionalDdl` false), so Kysely's Migrator runs a migration's statements,
 * and then the row of its ledger, each on its own. A process stopped between them — a pod the
 * kubelet kills while it starts on a starved node — left a file half migrated: on the real node
 * two capsule pods then failed every later start with "conversation table migration failed:
 * duplicate column name: tenant" on their PersistentVolumeClaim. In one transaction a migration
 * and its ledger row land together or not at all (the journal rolls a stopped one back).
 */
import { SqliteAdapter, SqliteDialect } from 'kysely';

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

export class StoreSqliteDialect extends SqliteDialect {
  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}
