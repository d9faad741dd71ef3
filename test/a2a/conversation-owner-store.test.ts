/**
 * The conversation table keeps each message with its owner (issue 38 §1), on the real engines
 * (SQLite, and a real PostgreSQL server): a threaded history is read by owner and context id
 * together, and a store written before messages had owners is migrated — each context's rows go
 * to the one caller whose tasks ran in it, and a context callers shared (or with no task left) to
 * no caller. A migration stopped halfway leaves nothing behind (SQLite included: sqlite-dialect.ts).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import Database from 'better-sqlite3';
import pg from 'pg';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { DatabaseTaskStore } from '@a2a-js/sdk/server/database';
import { openStore } from '../../runtime/a2a/store/store.ts';
import { CONVERSATION_TABLE, migrateMurmur } from '../../runtime/a2a/store/murmur-schema.ts';
import { HISTORIES_MAX_BYTES, RECORD_LIMIT, RECORD_MAX_BYTES } from '../../runtime/loop/capsule-session.ts';
import { NO_CALLER, type ConversationOwner } from '../../runtime/inference/conversation-store.ts';
import type { ConversationMessage } from '../../runtime/inference/wire.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';
import { tmp } from '../loop/kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const ANN: ConversationOwner = { tenant: '', user: 'apikey:ann' };
const BOB: ConversationOwner = { tenant: '', user: 'apikey:bob' };
const msg = (text: string): ConversationMessage => ({ role: 'user', content: [{ type: 'text', text }] }) as ConversationMessage;
const texts = (ms: ConversationMessage[]) => ms.map((m) => (m.content[0] as { text: string }).text);

let server: Postgres | undefined;
/** A fresh store URL of each engine; the PostgreSQL server is started once for the file. */
const ENGINES: Array<[string, (name: string) => Promise<string>]> = [
  ['sqlite', async (name) => `sqlite:${join(tmp(`${name}-`), 'store.db')}`],
  [
    'postgres',
    async (name) => {
      if (!server) {
        server = await startPostgres();
        const s = server;
        cleanup.push(() => s.stop());
      }
      return server.url(name.replace(/-/g, '_'));
    },
  ],
];

/** A Kysely of the store's database without openStore's migrations: to build one as an older runtime left it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function rawDb(url: string): Kysely<any> {
  if (url.startsWith('sqlite:')) return new Kysely({ dialect: new SqliteDialect({ database: new Database(url.slice('sqlite:'.length)) }) });
  return new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }) });
}

/** The SDK's own schema migrations (its `a2a-db upgrade`), as openStore runs them. */
async function sdkUpgrade(url: string): Promise<void> {
  const entry = createRequire(import.meta.url).resolve('@a2a-js/sdk/server/database');
  const { run } = (await import(pathToFileURL(join(dirname(entry), '..', '..', 'cli', 'run.js')).href)) as {
    run: (argv: string[], env: object, out: object) => Promise<number>;
  };
  expect(await run(['upgrade', '--url', url], {}, { log: () => undefined, error: () => undefined })).toBe(0);
}

const task = (contextId: string): Task => ({
  id: crypto.randomUUID(),
  contextId,
  status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
  artifacts: [],
  history: [],
  metadata: undefined,
});
const callerOf = (o: ConversationOwner) => new ServerCallContext({ user: { isAuthenticated: true, userName: o.user }, tenant: o.tenant });

describe.each(ENGINES)('conversation owners on %s', (_engine, urlOf) => {
  it("a context's history is its owner's: another owner, or the same user in another tenant, reads none of it under the same context id", async () => {
    const store = await openStore(await urlOf('owner-history'));
    cleanup.push(() => store.close());
    const c = store.conversations;
    await c.append(ANN, 'support-chat', [msg('ann 1'), msg('ann 2')]);
    await c.append(BOB, 'support-chat', [msg('bob 1')]);
    await c.append(ANN, 'support-chat', [msg('ann 3')]);
    expect(texts(await c.loadContext(ANN, 'support-chat', HISTORIES_MAX_BYTES))).toEqual(['ann 1', 'ann 2', 'ann 3']);
    expect(texts(await c.loadContext(BOB, 'support-chat', HISTORIES_MAX_BYTES))).toEqual(['bob 1']);
    expect(await c.loadContext({ tenant: 'other', user: ANN.user }, 'support-chat', HISTORIES_MAX_BYTES)).toEqual([]);
    expect(await c.loadContext(NO_CALLER, 'support-chat', HISTORIES_MAX_BYTES)).toEqual([]);
    // The record keeps every message, each with its owner (conversation/read scopes by it).
    const record = await c.loadRecord(RECORD_LIMIT, RECORD_MAX_BYTES);
    expect(record.map((r) => [r.owner.user, texts([r.message])[0]])).toEqual([
      [ANN.user, 'ann 1'],
      [ANN.user, 'ann 2'],
      [BOB.user, 'bob 1'],
      [ANN.user, 'ann 3'],
    ]);
  }, 120_000);

  it('a store written before owners: a context goes to the one caller whose tasks ran in it; one callers shared, or with no task left, to no caller', async () => {
    const url = await urlOf('owner-migration');
    await sdkUpgrade(url);
    const db = rawDb(url);
    // As the previous runtime left it: our tables without the owner columns, the SDK's tasks.
    await migrateMurmur(db, url.startsWith('sqlite:') ? 'sqlite' : 'postgres', '0002_create_task_runner');
    const tasks = new DatabaseTaskStore(db);
    await tasks.save(task('ann-only'), callerOf(ANN));
    await tasks.save(task('ann-only'), callerOf(ANN));
    await tasks.save(task('shared'), callerOf(ANN));
    await tasks.save(task('shared'), callerOf(BOB));
    const rows = [
      ['ann-only', 'ann a'],
      ['shared', 'ann s'],
      ['shared', 'bob s'],
      ['orphan', 'nobody o'],
      ['ann-only', 'ann b'],
    ];
    await db
      .insertInto(CONVERSATION_TABLE)
      .values(
        rows.map(([context, text], i) => {
          const message = JSON.stringify(msg(text!));
          return { seq: i + 1, context_id: context, bytes: Buffer.byteLength(message), message };
        }),
      )
      .execute();
    await db.destroy();

    const store = await openStore(url);
    cleanup.push(() => store.close());
    const load = (o: ConversationOwner, context: string) => store.conversations.loadContext(o, context, HISTORIES_MAX_BYTES).then(texts);
    expect(await load(ANN, 'ann-only')).toEqual(['ann a', 'ann b']);
    expect(await load(BOB, 'ann-only')).toEqual([]);
    // Shared while conversations were keyed by context alone: whose row is whose cannot be told.
    expect(await load(ANN, 'shared')).toEqual([]);
    expect(await load(BOB, 'shared')).toEqual([]);
    expect(await load(NO_CALLER, 'shared')).toEqual(['ann s', 'bob s']);
    expect(await load(NO_CALLER, 'orphan')).toEqual(['nobody o']);
    // Nothing is lost from the record, and appends go on after the migrated rows.
    await store.conversations.append(BOB, 'shared', [msg('bob new')]);
    expect(await load(BOB, 'shared')).toEqual(['bob new']);
    expect((await store.conversations.loadRecord(RECORD_LIMIT, RECORD_MAX_BYTES)).length).toBe(6);
  }, 120_000);

  it('a migration stopped halfway leaves the store as it was, and the next start completes it', async () => {
    const url = await urlOf('half-migration');
    await sdkUpgrade(url);
    const db = rawDb(url);
    await migrateMurmur(db, url.startsWith('sqlite:') ? 'sqlite' : 'postgres', '0002_create_task_runner');
    // 0003 adds the owner columns, then makes this index: taken already, its last statement fails
    // after the columns were added, as a start stopped there would leave it.
    const index = `${CONVERSATION_TABLE}_owner_context_idx`;
    await db.schema.createIndex(index).on(CONVERSATION_TABLE).columns(['seq']).execute();
    const err = await openStore(url).then(
      (s) => s.close().then(() => undefined),
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/conversation table migration failed/);
    // Nothing of 0003 stayed: no owner column, and its ledger row is not written.
    const columns = (await db.introspection.getTables()).find((t) => t.name === CONVERSATION_TABLE)!.columns.map((c) => c.name);
    expect(columns).not.toContain('tenant');
    expect(columns).not.toContain('owner');
    await db.schema.dropIndex(index).execute();
    await db.destroy();
    // The next start migrates it whole (before: "duplicate column name: tenant", at every start).
    const store = await openStore(url);
    cleanup.push(() => store.close());
    await store.conversations.append(ANN, 'after', [msg('migrated')]);
    expect(texts(await store.conversations.loadContext(ANN, 'after', HISTORIES_MAX_BYTES))).toEqual(['migrated']);
  }, 120_000);
});
