/**
 * The conversation record in the store's database, next to the SDK's tables and through the same
 * Kysely instance: one row per message (`murmur_conversation`), ordered by a per-database sequence
 * the writer assigns (one writer per store in the embedded mode). Its schema is created by our own
 * Kysely migration, with its own ledger (`murmur_migrations`), as the SDK does for its tables.
 */
import { sql, type Kysely } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import type { ConversationMessage } from '../inference/wire.ts';
import type { ConversationStore } from '../inference/conversation-store.ts';

export const CONVERSATION_TABLE = 'murmur_conversation';

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
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function migrateConversation(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    migrationTableName: 'murmur_migrations',
    migrationLockTableName: 'murmur_migrations_lock',
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

interface Row {
  seq: number | string;
  bytes: number;
  message: string;
}

/** Keep the newest rows (rows come newest first) within the byte bound; returns them oldest first. */
function newestWithin(rows: Row[], maxBytes: number): ConversationMessage[] {
  const out: ConversationMessage[] = [];
  let bytes = 0;
  for (const r of rows) {
    if (bytes + r.bytes > maxBytes) break;
    bytes += r.bytes;
    out.push(JSON.parse(r.message) as ConversationMessage);
  }
  return out.reverse();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function conversationTable(db: Kysely<any>): ConversationStore {
  let next: Promise<number> | undefined;
  const nextSeq = async (): Promise<number> => {
    const r = (await db.selectFrom(CONVERSATION_TABLE).select(sql<number | string | null>`max(seq)`.as('m')).executeTakeFirst()) as { m: number | string | null } | undefined;
    return Number(r?.m ?? 0) + 1;
  };
  let chain: Promise<void> = Promise.resolve();
  return {
    async loadRecord(maxMessages, maxBytes) {
      const rows = (await db.selectFrom(CONVERSATION_TABLE).select(['seq', 'bytes', 'message']).orderBy('seq', 'desc').limit(maxMessages).execute()) as Row[];
      return newestWithin(rows, maxBytes);
    },
    async loadContext(contextId, maxBytes) {
      const rows = (await db.selectFrom(CONVERSATION_TABLE).select(['seq', 'bytes', 'message']).where('context_id', '=', contextId).orderBy('seq', 'desc').execute()) as Row[];
      return newestWithin(rows, maxBytes);
    },
    append(contextId, messages) {
      if (messages.length === 0) return chain;
      // Appends are serialised so the sequence stays gap-free and ordered as the tasks finished.
      const p = chain.then(async () => {
        next ??= nextSeq();
        let seq = await next;
        const rows = messages.map((m) => {
          const message = JSON.stringify(m);
          return { seq: seq++, context_id: contextId, bytes: Buffer.byteLength(message), message };
        });
        await db.insertInto(CONVERSATION_TABLE).values(rows).execute();
        next = Promise.resolve(seq);
      });
      chain = p.catch(() => undefined);
      return p;
    },
  };
}
