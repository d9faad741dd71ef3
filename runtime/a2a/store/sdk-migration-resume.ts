/**
 * A SQLite store that an older runtime's first start left half-migrated, taken up where it stopped.
 *
 * Runtimes before sdk-migrations.ts ran the SDK's own `a2a-db upgrade`, whose plain SQLite dialect
 * has no transactional DDL: a migration's statements and then its ledger row each committed on
 * their own. A first start killed between them (a pod killed while it starts) left, say, `tasks`
 * and one of its indexes created and no ledger row, and every later start failed "table "tasks"
 * already exists". Nothing ever wrote to such a table: the store never opened.
 *
 * The repair: inside the migration's own transaction (its ledger row is written by the same one),
 * a statement whose objects are all already there, each exactly as that statement makes it (type,
 * table and SQL text as SQLite keeps them), is skipped; the others run. What the statements make is
 * learnt by running the store's migrations up to this one in a scratch in-memory database, one
 * statement at a time, so nothing is guessed about how SQLite normalises the SQL. Anything else —
 * an object of that name with other columns or another definition, an index or trigger on the
 * table that the migration does not make, a migration statement that makes no new object (an
 * `alter table`: whether it ran cannot be told) — is refused with E-STORE-006, the file left as
 * it was: it is not what a stopped migration leaves, and adopting it would hand the SDK a table it
 * did not make.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { MurError } from '../../errors.ts';

/** A store of the SDK's schema as sdk-migrations.ts reads it (its SdkStoreSchema; not imported: that file imports this one). */
interface StoreMigrations {
  readonly id: string;
  readonly migrations: ReadonlyArray<{ readonly name: string; readonly statements: readonly string[] }>;
}

/** One row of `sqlite_master`. */
interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** The name a `create table` / `create index` statement gives its object. */
const CREATED = /^create\s+(?:unique\s+)?(?:table|index)\s+(?:if\s+not\s+exists\s+)?"([^"]+)"/i;

const MASTER = 'select type, name, tbl_name, sql from sqlite_master';
const key = (o: SchemaObject): string => `${o.type}|${o.tbl_name}|${o.sql ?? ''}`;

// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the SDK's
type Trx = Transaction<any> | Kysely<any>;

/**
 * The statements of migration `index` of `store` still to run on `trx`: all of them when none of
 * the objects they name exists (every store but a half-migrated one: one query); else those whose
 * objects are missing, after checking that the ones present are the migration's own (see above).
 */
export async function statementsToRun(trx: Trx, store: StoreMigrations, index: number, file: string): Promise<readonly string[]> {
  const m = store.migrations[index]!;
  const names = m.statements.map((s) => CREATED.exec(s)?.[1]).filter((n): n is string => n !== undefined);
  if (names.length === 0) return m.statements;
  const { rows: present } = await sql<{ name: string }>`select name from sqlite_master where name in (${sql.join(names)})`.execute(trx);
  if (present.length === 0) return m.statements;
  const made = await madeByEach(store, index);
  const all = made.flat();
  const tables = all.filter((o) => o.type === 'table').map((o) => o.name);
  const refuse = (what: string, why: string): never => {
    const drop = tables.map((t) => `"${t}"`).join(', ');
    throw new MurError(
      'E-STORE-006',
      `the SQLite store ${file} has ${what} without the ledger row of the A2A SDK's migration ${m.name} (store "${store.id}"), and it is not what that migration makes: ${why}`,
      {
        hint: `a first start stopped mid-migration leaves only the migration's own objects, which the next start takes up; this is something else: move ${file} aside and start again (a new store is made), or, if nothing in it is needed, drop it (sqlite3 ${file} 'DROP TABLE ${drop}': its indexes go with it) and start again`,
        location: { file },
      },
    );
  };
  const { rows: actual } =
    await sql<SchemaObject>`${sql.raw(MASTER)} where name in (${sql.join(all.map((o) => o.name))}) or tbl_name in (${sql.join([...tables, ''])})`.execute(trx);
  const byName = new Map(actual.map((o) => [o.name, o]));
  const expected = new Set(all.map((o) => o.name));
  const stranger = actual.find((o) => !expected.has(o.name));
  if (stranger) refuse(`table "${stranger.tbl_name}"`, `its ${stranger.type} "${stranger.name}" is not one the migration makes (${stranger.sql ?? 'no SQL'})`);
  const describe = (o: SchemaObject): string => o.sql ?? `${o.type} "${o.name}" on "${o.tbl_name}"`;
  const run: string[] = [];
  for (const [i, s] of m.statements.entries()) {
    const objects = made[i]!;
    if (objects.length === 0) refuse(`"${present[0]!.name}"`, `its statement ${i + 1} makes no new object, so whether it ran cannot be told`);
    const here = objects.filter((o) => byName.has(o.name));
    for (const o of here) {
      const a = byName.get(o.name)!;
      if (key(a) !== key(o)) refuse(`${a.type} "${a.name}"`, `it is ${describe(a)} where the migration makes ${describe(o)}`);
    }
    if (here.length === 0) run.push(s);
    else if (here.length < objects.length) {
      const missing = objects.filter((o) => !byName.has(o.name)).map((o) => `"${o.name}"`);
      refuse(`${here[0]!.type} "${here[0]!.name}"`, `its statement ${i + 1} makes it together with ${missing.join(', ')}, which is missing`);
    }
  }
  return run;
}

/**
 * What each statement of migration `index` makes: the `sqlite_master` rows it adds, run in a
 * scratch in-memory database after the store's earlier migrations. A statement that changes an
 * existing row (an `alter table`) counts as making nothing.
 */
async function madeByEach(store: StoreMigrations, index: number): Promise<SchemaObject[][]> {
  // Loaded already: the store itself runs on it (store.ts).
  const { default: Database } = await import('better-sqlite3');
  const scratch = new Database(':memory:');
  try {
    const master = (): SchemaObject[] => scratch.prepare(MASTER).all() as SchemaObject[];
    for (const earlier of store.migrations.slice(0, index)) for (const s of earlier.statements) scratch.exec(s);
    const made: SchemaObject[][] = [];
    for (const s of store.migrations[index]!.statements) {
      const before = new Map(master().map((o) => [o.name, key(o)]));
      scratch.exec(s);
      const after = master();
      const changed = after.some((o) => before.has(o.name) && before.get(o.name) !== key(o)) || after.length < before.size;
      made.push(changed ? [] : after.filter((o) => !before.has(o.name)));
    }
    return made;
  } finally {
    scratch.close();
  }
}
