/**
 * Prepared statements kept per SQL text for the embedded SQLite store. Kysely's SqliteDialect
 * calls `database.prepare(sql)` for every query it runs, and better-sqlite3 compiles the SQL each
 * time: on `mur serve` that was about two fifths of the store's main-thread time per task (issue 42).
 * The store's queries are few distinct texts (the SDK's task upsert and load, ours), so the
 * dialect is given this wrapper as its `database`: the same connection, whose `prepare` answers
 * from a bounded least-recently-used map (values are bound per call, so a statement is reusable).
 *
 * A statement still iterating (kysely's `stream()`) is busy and cannot be run again until it ends:
 * such a text gets a fresh statement for that call, not the cached one.
 */
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** Distinct SQL texts kept; beyond it the least recently used is dropped (and compiled again if it returns). */
export const DEFAULT_STATEMENT_CACHE = 64;

/** The slice of a better-sqlite3 `Database` this wrapper uses. */
export interface SqliteEngine {
  prepare(sql: string): SqliteStatement & { readonly busy?: boolean };
  close(): unknown;
}

export interface CachedStatements extends SqliteDatabase {
  /** How many statements are held now (at most `max`). */
  readonly size: number;
  readonly max: number;
  /** How many times SQL was compiled through this wrapper (misses, evicted texts again, busy ones). */
  readonly prepared: number;
}

/** `db` for kysely's SqliteDialect, preparing each SQL text once while it stays among the `max` most recent. */
export function cachedStatements(db: SqliteEngine, max = DEFAULT_STATEMENT_CACHE): CachedStatements {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`statement cache size must be a positive integer, got ${max}`);
  // A Map iterates in insertion order: deleting and re-setting on each use keeps the least
  // recently used first, so eviction is the first key.
  const cache = new Map<string, SqliteStatement & { readonly busy?: boolean }>();
  let prepared = 0;
  const compile = (sql: string) => {
    prepared++;
    return db.prepare(sql);
  };
  return {
    max,
    get size() {
      return cache.size;
    },
    get prepared() {
      return prepared;
    },
    prepare(sql: string): SqliteStatement {
      const hit = cache.get(sql);
      if (hit && !hit.busy) {
        cache.delete(sql);
        cache.set(sql, hit);
        return hit;
      }
      if (hit) return compile(sql);
      const stmt = compile(sql);
      cache.set(sql, stmt);
      if (cache.size > max) cache.delete(cache.keys().next().value!);
      return stmt;
    },
    close(): void {
      cache.clear();
      db.close();
    },
  };
}
