/**
 * The durable conversation record (runtime/a2a/store/conversation-table.ts) on the real engines: the
 * byte bounds the session loads it with (the record within 16 MiB, a context's history within
 * 32 MiB: the newest messages that fit), and appends from several writers at once on one
 * PostgreSQL store (replicas): unique, gap-free sequence numbers, each task's messages contiguous
 * and in order, nothing lost.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Kysely, sql } from 'kysely';
import { openStore, type DurableStore } from '../../runtime/a2a/store/store.ts';
import { StoreSqliteDialect } from '../../runtime/a2a/store/sqlite-dialect.ts';
import { CONVERSATION_TABLE, conversationTable } from '../../runtime/a2a/store/conversation-table.ts';
import { HISTORIES_MAX_BYTES, RECORD_LIMIT, RECORD_MAX_BYTES } from '../../runtime/loop/capsule-session.ts';
import type { ConversationMessage } from '../../runtime/inference/wire.ts';
import type { ConversationOwner } from '../../runtime/inference/conversation-store.ts';
import { startPostgres } from '../support/postgres.ts';
import { tmp } from '../loop/kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const MiB = 1024 * 1024;
const msg = (text: string): ConversationMessage => ({ role: 'user', content: [{ type: 'text', text }] }) as ConversationMessage;
const firstWord = (m: ConversationMessage) => (m.content[0] as { text: string }).text.split(' ')[0];
const ANN: ConversationOwner = { tenant: '', user: 'apikey:ann' };

/**
 * A second Kysely on the SQLite store's own connection that records the first word of every
 * statement it sends to the engine (Kysely's SQLite driver prepares each statement it runs, from
 * the store's statement cache), compiled by Kysely or not.
 */
function statementsSent(store: DurableStore): { db: Kysely<Record<string, never>>; sent: string[] } {
  const sent: string[] = [];
  const engine = store.statements!;
  const db = new Kysely<Record<string, never>>({
    dialect: new StoreSqliteDialect({
      database: {
        prepare: (text: string) => (sent.push(text.trim().split(/\s+/)[0]!.toLowerCase()), engine.prepare(text)),
        close: () => {},
      },
    }),
  });
  return { db, sent };
}

describe('conversation table', () => {
  it('loads the record within 16 MiB and a context within 32 MiB: the newest messages that fit, oldest first', async () => {
    const store = await openStore(`sqlite:${join(tmp('conv-bytes-'), 'c.db')}`);
    cleanup.push(() => store.close());
    const big = (tag: string, mib: number) => msg(`${tag} ${'x'.repeat(mib * MiB)}`);
    // Context "wide": 12 messages of 3 MiB (36 MiB); then "other": one small message.
    for (let i = 1; i <= 12; i++) await store.conversations.append(ANN, 'wide', [big(`w${i}`, 3)]);
    await store.conversations.append(ANN, 'other', [msg('o1 small')]);
    const record = await store.conversations.loadRecord(RECORD_LIMIT, RECORD_MAX_BYTES);
    // 16 MiB holds the small one and the five newest 3 MiB messages.
    expect(record.map((r) => firstWord(r.message))).toEqual(['w8', 'w9', 'w10', 'w11', 'w12', 'o1']);
    const wide = await store.conversations.loadContext(ANN, 'wide', HISTORIES_MAX_BYTES);
    // 32 MiB holds ten of the twelve.
    expect(wide.map(firstWord)).toEqual(['w3', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9', 'w10', 'w11', 'w12']);
  }, 120_000);

  it('on SQLite an append after the first takes its numbers without reading max(seq); one meeting a number another writer took reads it again', async () => {
    const store = await openStore(`sqlite:${join(tmp('conv-seq-'), 'c.db')}`);
    cleanup.push(() => store.close());
    const { db, sent } = statementsSent(store);
    cleanup.push(() => db.destroy());
    const one = conversationTable(db, 'sqlite');
    await one.append(ANN, 'c', [msg('a1 first'), msg('a2')]);
    expect(sent).toEqual(['begin', 'select', 'insert', 'commit']);
    sent.length = 0;
    await one.append(ANN, 'c', [msg('a3')]);
    await one.append(ANN, 'c', [msg('a4')]);
    expect(sent).toEqual(['insert', 'insert']);
    // Another writer of the file takes the next number: the next append meets it and reads max(seq).
    await conversationTable(store.db, 'sqlite').append(ANN, 'c', [msg('b1')]);
    sent.length = 0;
    await one.append(ANN, 'c', [msg('a5')]);
    expect(sent).toEqual(['insert', 'begin', 'select', 'insert', 'commit']);
    const rows = await store.db.selectFrom(CONVERSATION_TABLE).select(['seq', 'message']).orderBy('seq').execute();
    expect(rows.map((r) => [Number(r.seq), firstWord(JSON.parse(r.message as string))])).toEqual([
      [1, 'a1'],
      [2, 'a2'],
      [3, 'a3'],
      [4, 'a4'],
      [5, 'b1'],
      [6, 'a5'],
    ]);
  });

  it("on SQLite the append's INSERT is compiled once per number of rows: later appends run its SQL with their own values", async () => {
    const store = await openStore(`sqlite:${join(tmp('conv-compile-'), 'c.db')}`);
    cleanup.push(() => store.close());
    const compiled: string[] = [];
    const db = store.db.withPlugin({ transformQuery: (a) => (compiled.push(a.node.kind), a.node), transformResult: async (a) => a.result });
    const conv = conversationTable(db, 'sqlite');
    await conv.append(ANN, 'c', [msg('a1 first')]);
    compiled.length = 0;
    for (const w of ['a2', 'a3', 'a4']) await conv.append(ANN, 'c', [msg(`${w} one`)]);
    await conv.append({ tenant: 't', user: 'apikey:bob' }, 'd', [msg('b1 two'), msg('b2 rows')]);
    await conv.append(ANN, 'c', [msg('a5 two'), msg('a6 rows')]);
    expect(compiled).toEqual(['InsertQueryNode', 'InsertQueryNode']);
    const rows = await store.db.selectFrom(CONVERSATION_TABLE).select(['seq', 'tenant', 'owner', 'context_id', 'bytes', 'message']).orderBy('seq').execute();
    expect(rows.map((r) => [Number(r.seq), r.tenant, r.owner, r.context_id, firstWord(JSON.parse(r.message as string))])).toEqual([
      [1, '', 'apikey:ann', 'c', 'a1'],
      [2, '', 'apikey:ann', 'c', 'a2'],
      [3, '', 'apikey:ann', 'c', 'a3'],
      [4, '', 'apikey:ann', 'c', 'a4'],
      [5, 't', 'apikey:bob', 'd', 'b1'],
      [6, 't', 'apikey:bob', 'd', 'b2'],
      [7, '', 'apikey:ann', 'c', 'a5'],
      [8, '', 'apikey:ann', 'c', 'a6'],
    ]);
    for (const r of rows) expect(Number(r.bytes)).toBe(Buffer.byteLength(r.message as string));
    expect((await store.conversations.loadContext({ tenant: 't', user: 'apikey:bob' }, 'd', MiB)).map(firstWord)).toEqual(['b1', 'b2']);
  });

  it('several writers on one PostgreSQL store append at once: unique gap-free numbers, each batch contiguous and in order', async () => {
    const pg = await startPostgres();
    cleanup.push(() => pg.stop());
    const url = await pg.url('murmur_conv_writers');
    const stores: DurableStore[] = [];
    for (let i = 0; i < 3; i++) stores.push(await openStore(url));
    cleanup.push(async () => {
      for (const s of stores) await s.close();
    });
    // 3 writers × 20 tasks × 5 messages, all started together.
    await Promise.all(
      stores.flatMap((s, w) =>
        Array.from({ length: 20 }, (_, t) =>
          s.conversations.append(
            ANN,
            `w${w}-t${t}`,
            Array.from({ length: 5 }, (_, k) => msg(`w${w}-t${t}-m${k}`)),
          ),
        ),
      ),
    );
    const rows = (
      await sql<{
        seq: string;
        context_id: string;
        message: string;
      }>`SELECT seq, context_id, message FROM ${sql.table(CONVERSATION_TABLE)} ORDER BY seq`.execute(stores[0]!.db)
    ).rows;
    expect(rows.length).toBe(300);
    expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    // Each task's five messages are one run of numbers, in their order.
    for (let i = 0; i < 300; i += 5) {
      const run = rows.slice(i, i + 5);
      expect(new Set(run.map((r) => r.context_id)).size).toBe(1);
      expect(run.map((r) => (JSON.parse(r.message) as ConversationMessage).content[0]).map((b) => (b as { text: string }).text.split('-m')[1])).toEqual([
        '0',
        '1',
        '2',
        '3',
        '4',
      ]);
    }
    // And every writer's record reads the same.
    const seen = await Promise.all(stores.map((s) => s.conversations.loadRecord(RECORD_LIMIT, RECORD_MAX_BYTES)));
    for (const r of seen) expect(r.length).toBe(300);
  }, 180_000);
});
