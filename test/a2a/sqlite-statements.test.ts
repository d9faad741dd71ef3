/**
 * The SQLite store's prepared-statement cache (runtime/a2a/store/sqlite-statements.ts) on the real
 * engine: the store compiles each SQL text once however many tasks it saves and loads, the cache
 * holds at most its bound (an evicted text is compiled again when it returns), and a statement busy
 * iterating is not handed out twice.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { TaskState, type Task } from '@a2a-js/sdk';
import { openStore } from '../../runtime/a2a/store/store.ts';
import { cachedStatements, type SqliteEngine } from '../../runtime/a2a/store/sqlite-statements.ts';
import { tmp } from '../loop/kit.ts';

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

function task(id: string, state: TaskState): Task {
  return { id, contextId: 'ctx', status: { state, timestamp: new Date().toISOString() }, artifacts: [], history: [], metadata: undefined } as unknown as Task;
}

/** A real better-sqlite3 database whose compilations are listed (the engine's own prepare, counted). */
function countedEngine(file: string): { engine: SqliteEngine; compiled: string[]; db: Database.Database } {
  const db = new Database(file);
  const compiled: string[] = [];
  return {
    db,
    compiled,
    engine: {
      prepare: (text: string) => {
        compiled.push(text);
        return db.prepare(text);
      },
      close: () => db.close(),
    },
  };
}

describe('SQLite prepared-statement cache', () => {
  it('the store compiles each SQL text once: 40 task saves and loads prepare no more statements than the first one did', async () => {
    const store = await openStore(`sqlite:${join(tmp('stmt-store-'), 's.db')}`);
    cleanup.push(() => store.close());
    expect(store.statements).toBeDefined();
    const ctx = new ServerCallContext();
    await store.tasks.save(task('t0', TaskState.TASK_STATE_WORKING), ctx);
    await store.tasks.load('t0', ctx);
    const afterFirst = store.statements!.prepared;
    for (let i = 1; i <= 40; i++) {
      await store.tasks.save(task(`t${i}`, TaskState.TASK_STATE_WORKING), ctx);
      await store.tasks.save(task(`t${i}`, TaskState.TASK_STATE_COMPLETED), ctx);
      expect((await store.tasks.load(`t${i}`, ctx))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    }
    expect(store.statements!.prepared).toBe(afterFirst);
  });

  it('through kysely, a repeated query is compiled once; the cache holds at most its bound and compiles an evicted text again', async () => {
    const { engine, compiled } = countedEngine(join(tmp('stmt-lru-'), 'l.db'));
    const cache = cachedStatements(engine, 2);
    const db = new Kysely<{ t: { id: number; v: string } }>({ dialect: new SqliteDialect({ database: cache }) });
    cleanup.push(() => db.destroy());
    await sql`create table t (id integer primary key, v text)`.execute(db);
    for (let i = 0; i < 10; i++)
      await db
        .insertInto('t')
        .values({ id: i, v: `v${i}` })
        .execute();
    const insertText = compiled.filter((s) => s.startsWith('insert'));
    expect(insertText).toHaveLength(1);
    // Three distinct texts in turn through a cache of two: each use evicts the next one due.
    const a = () => db.selectFrom('t').select('v').where('id', '=', 1).execute();
    const b = () => db.selectFrom('t').select('id').where('v', '=', 'v2').execute();
    const c = () => db.selectFrom('t').selectAll().execute();
    const before = compiled.length;
    for (let round = 0; round < 3; round++) {
      expect((await a())[0]?.v).toBe('v1');
      expect((await b())[0]?.id).toBe(2);
      expect(await c()).toHaveLength(10);
      expect(cache.size).toBeLessThanOrEqual(2);
    }
    expect(compiled.length - before).toBe(9);
    expect(cache.prepared).toBe(compiled.length);
    // Two texts alternating fit: compiled once each, then answered from the cache.
    const mid = compiled.length;
    for (let i = 0; i < 5; i++) {
      await a();
      await b();
    }
    expect(compiled.length - mid).toBe(2);
  });

  it('a statement still iterating is not handed out again: the same text meanwhile gets a statement of its own', () => {
    const { engine, compiled, db } = countedEngine(':memory:');
    cleanup.push(() => db.open && db.close());
    db.exec('create table n (i integer); insert into n values (1), (2), (3)');
    const cache = cachedStatements(engine, 4);
    const text = 'select i from n order by i';
    const outer = cache.prepare(text).iterate([]) as IterableIterator<{ i: number }>;
    const seen: number[] = [];
    for (const row of outer) {
      seen.push(row.i, ...(cache.prepare(text).all([]) as Array<{ i: number }>).map((r) => r.i));
    }
    expect(seen).toEqual([1, 1, 2, 3, 2, 1, 2, 3, 3, 1, 2, 3]);
    expect(compiled.filter((s) => s === text)).toHaveLength(4);
    // Ended, the cached statement serves again.
    expect(cache.prepare(text).all([])).toHaveLength(3);
    expect(compiled.filter((s) => s === text)).toHaveLength(4);
  });

  it('refuses a bound that is not a positive integer', () => {
    const { engine, db } = countedEngine(':memory:');
    cleanup.push(() => db.open && db.close());
    expect(() => cachedStatements(engine, 0)).toThrow(/positive integer, got 0/);
  });
});
