/**
 * The conversation record in the store's database, next to the SDK's tables and through the same
 * Kysely instance: one row per message (`murmur_conversation`, schema in murmur-schema.ts), ordered
 * by `seq`, each with its owner (`tenant`, `owner`: the caller whose task produced it, the SDK task
 * table's owner scope). A threaded history is read by owner and context id together, so a caller
 * never continues another caller's conversation by sending its context id.
 *
 * Several writers (replicas on one PostgreSQL store): each append takes the next numbers under a
 * transaction-scoped advisory lock, reads `max(seq)` and inserts, so numbers are unique, gap-free
 * and in commit order. Why not a sequence or an identity column: a sequence hands out numbers at
 * insert time while the transactions commit in any order, so a reader could see seq 7 before seq 6
 * exists and the "newest messages" window would skip one; and the column is the writer-assigned
 * `bigint` primary key of migration 0001, which SQLite cannot turn into an identity without a table
 * rewrite. Appends happen once per finished task, so one short lock is cheap. The primary key is
 * the backstop: a writer that bypassed the lock fails its insert instead of interleaving.
 * SQLite has one writer per file: after its first append (one transaction, as above) the process
 * knows the next number and appends with the INSERT alone, atomic by itself, instead of BEGIN,
 * max(seq), INSERT, COMMIT (three statements fewer per finished task on `mur serve`, issue 42); an
 * insert that still meets a taken number (another process wrote the file) goes the locked way.
 * That INSERT is built and compiled by Kysely once per number of rows and then run as the same SQL
 * with new values (`CompiledQuery.raw`, through the same connection and its lock): building and
 * compiling it again for every finished task was a tenth of the store's per-task garbage (issue 42).
 */
import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { ConversationMessage } from '../../inference/wire.ts';
import type { ConversationOwner, ConversationStore, OwnedMessage } from '../../inference/conversation-store.ts';
import { CONVERSATION_TABLE } from './murmur-schema.ts';

export { CONVERSATION_TABLE } from './murmur-schema.ts';

/** Advisory lock key of the appends (namespace 'MUR1', key 0; replica ids are never 0). */
const APPEND_LOCK = [0x4d555231, 0] as const;

interface Row {
  seq: number | string;
  bytes: number;
  message: string;
  tenant?: string;
  owner?: string;
}

const RECORD_COLUMNS = ['seq', 'bytes', 'message', 'tenant', 'owner'] as const;

/** A row to insert: its columns in this order, which is the order of the INSERT's parameters. */
interface NewRow {
  seq: number;
  tenant: string;
  owner: string;
  context_id: string;
  bytes: number;
  message: string;
}

const rowValues = (rows: NewRow[]): unknown[] => rows.flatMap((r) => [r.seq, r.tenant, r.owner, r.context_id, r.bytes, r.message]);

/** Keep the newest rows (rows come newest first) within the byte bound; returns them oldest first. */
function newestWithin(rows: Row[], maxBytes: number): Row[] {
  const out: Row[] = [];
  let bytes = 0;
  for (const r of rows) {
    if (bytes + r.bytes > maxBytes) break;
    bytes += r.bytes;
    out.push(r);
  }
  return out.reverse();
}

const parsed = (r: Row) => JSON.parse(r.message) as ConversationMessage;
const owned = (r: Row): OwnedMessage => ({ owner: { tenant: r.tenant ?? '', user: r.owner ?? '' }, message: parsed(r) });

// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
export function conversationTable(db: Kysely<any>, kind: 'sqlite' | 'postgres' = 'sqlite'): ConversationStore {
  let chain: Promise<void> = Promise.resolve();
  // What this process has seen of the record: every seq up to `watermark`, plus its own appends
  // above it (`own`), so othersSince returns only the other writers' messages, each once. Appends
  // and othersSince run on one chain, so a read never falls between a commit and its bookkeeping.
  let watermark = 0;
  const own = new Set<number>();
  // SQLite only: the number after this process's last append (see the header), and the insert at it.
  let nextSeq: number | undefined;
  // The INSERT's SQL by number of rows, kept only when Kysely's own compile took the parameters in
  // rowValues' order (checked on the rows it was compiled for).
  const insertSql = new Map<number, string>();
  const insert = (rows: NewRow[]): CompiledQuery => {
    const known = insertSql.get(rows.length);
    if (known !== undefined) return CompiledQuery.raw(known, rowValues(rows));
    const compiled = db.insertInto(CONVERSATION_TABLE).values(rows).compile();
    const values = rowValues(rows);
    if (compiled.parameters.length === values.length && compiled.parameters.every((v, i) => v === values[i])) insertSql.set(rows.length, compiled.sql);
    return compiled;
  };
  const appendAt = async (first: number, rows: NewRow[]): Promise<number[] | undefined> => {
    try {
      await db.executeQuery(insert(rows));
      return rows.map((_, i) => first + i);
    } catch (e) {
      nextSeq = undefined;
      if (String((e as { code?: unknown }).code).startsWith('SQLITE_CONSTRAINT')) return undefined; // taken: the locked way
      throw e;
    }
  };
  const serial = <T>(f: () => Promise<T>): Promise<T> => {
    const p = chain.then(f);
    chain = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  };
  return {
    shared: kind === 'postgres',
    async loadRecord(maxMessages, maxBytes) {
      const rows = (await db
        .selectFrom(CONVERSATION_TABLE)
        .select([...RECORD_COLUMNS])
        .orderBy('seq', 'desc')
        .limit(maxMessages)
        .execute()) as Row[];
      watermark = Math.max(watermark, rows.length ? Number(rows[0]!.seq) : 0);
      return newestWithin(rows, maxBytes).map(owned);
    },
    othersSince(maxMessages, maxBytes) {
      return serial(async () => {
        const rows = (await db
          .selectFrom(CONVERSATION_TABLE)
          .select([...RECORD_COLUMNS])
          .where('seq', '>', watermark)
          .orderBy('seq', 'desc')
          .limit(maxMessages)
          .execute()) as Row[];
        if (rows.length === 0) return [];
        watermark = Math.max(watermark, Number(rows[0]!.seq));
        const others = rows.filter((r) => !own.has(Number(r.seq)));
        for (const n of [...own]) if (n <= watermark) own.delete(n);
        return newestWithin(others, maxBytes).map(owned);
      });
    },
    async loadContext(owner: ConversationOwner, contextId, maxBytes) {
      const rows = (await db
        .selectFrom(CONVERSATION_TABLE)
        .select(['seq', 'bytes', 'message'])
        .where('tenant', '=', owner.tenant)
        .where('owner', '=', owner.user)
        .where('context_id', '=', contextId)
        .orderBy('seq', 'desc')
        .execute()) as Row[];
      return newestWithin(rows, maxBytes).map(parsed);
    },
    append(owner: ConversationOwner, contextId, messages) {
      if (messages.length === 0) return Promise.resolve();
      const rowsFrom = (first: number): NewRow[] =>
        messages.map((m, i) => {
          const message = JSON.stringify(m);
          return { seq: first + i, tenant: owner.tenant, owner: owner.user, context_id: contextId, bytes: Buffer.byteLength(message), message };
        });
      // This process's appends stay in the order its tasks finished; other writers wait on the lock.
      return serial(async () => {
        let seqs = nextSeq === undefined ? undefined : await appendAt(nextSeq, rowsFrom(nextSeq));
        seqs ??= await db.transaction().execute(async (tx) => {
          if (kind === 'postgres') await sql`SELECT pg_advisory_xact_lock(${APPEND_LOCK[0]}::int, ${APPEND_LOCK[1]}::int)`.execute(tx);
          const r = (await tx.selectFrom(CONVERSATION_TABLE).select(sql<number | string | null>`max(seq)`.as('m')).executeTakeFirst()) as
            | { m: number | string | null }
            | undefined;
          const rows = rowsFrom(Number(r?.m ?? 0) + 1);
          await tx.insertInto(CONVERSATION_TABLE).values(rows).execute();
          return rows.map((r) => r.seq);
        });
        for (const n of seqs) own.add(n);
        if (kind === 'sqlite') nextSeq = seqs[seqs.length - 1]! + 1;
      });
    },
  };
}
