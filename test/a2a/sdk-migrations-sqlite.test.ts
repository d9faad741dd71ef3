/**
 * The A2A SDK's schema migrations on the embedded SQLite store (runtime/a2a/store/sdk-migrations.ts):
 * each lands with its ledger row or not at all. A first start killed by SIGKILL in the middle of
 * them (a pod the kubelet kills while it starts) leaves a file the next start migrates and opens;
 * the schema and ledgers are the ones the SDK's own `a2a-db upgrade` makes, so a store either one
 * migrated opens with the other; and an SDK whose rendered migrations are not in the form the
 * runtime reads is refused by name (E-STORE-004).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { openStore } from '../../runtime/a2a/store/store.ts';
import { parseSdkSchema } from '../../runtime/a2a/store/sdk-migrations.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../loop/kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

type Run = (argv: string[], env: object, out: { log: (...a: unknown[]) => void; error: (...a: unknown[]) => void }) => Promise<number>;

/** The SDK's migration runner (the implementation of its `a2a-db` bin), as store.ts finds it. */
async function sdkRun(): Promise<Run> {
  const entry = createRequire(import.meta.url).resolve('@a2a-js/sdk/server/database');
  return ((await import(pathToFileURL(join(dirname(entry), '..', '..', 'cli', 'run.js')).href)) as { run: Run }).run;
}

/** What the file holds: its tables and indexes with their SQL, and each ledger's migration names. */
function schemaOf(file: string, only: (name: string) => boolean) {
  const db = new Database(file, { readonly: true });
  try {
    const objects = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all() as {
      type: string;
      name: string;
      tbl_name: string;
      sql: string | null;
    }[];
    const kept = objects.filter((o) => only(o.tbl_name));
    const ledgers = Object.fromEntries(
      kept
        .filter((o) => o.type === 'table' && /^a2a_.*_migrations$/.test(o.name))
        .map((o) => [o.name, (db.prepare(`SELECT name FROM "${o.name}" ORDER BY name`).all() as { name: string }[]).map((r) => r.name)]),
    );
    const locks = kept.some((o) => o.name === 'a2a_migrations_lock') ? db.prepare('SELECT id, is_locked FROM a2a_migrations_lock').all() : [];
    return { objects: kept, ledgers, locks };
  } finally {
    db.close();
  }
}

const task = (): Task => ({
  id: crypto.randomUUID(),
  contextId: crypto.randomUUID(),
  status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
  artifacts: [],
  history: [],
  metadata: undefined,
});
const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: 'apikey:ann' }, tenant: '' });

/**
 * Preloaded into the first start: before the engine prepares a statement containing $PAUSE_AT it
 * says so on stdout and blocks the thread, so the test kills the process right there.
 */
const PAUSE_HOOK = `
import { createRequire } from 'node:module';
import { writeSync } from 'node:fs';
const Database = createRequire(${JSON.stringify(`${PROJECT_ROOT}/`)})('better-sqlite3');
const at = process.env.PAUSE_AT;
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (sql, ...rest) {
  if (sql.includes(at)) {
    writeSync(1, 'paused before: ' + sql + '\\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  }
  return prepare.call(this, sql, ...rest);
};
`;

/** What a first start runs: openStore(url), or (`old`) the SDK's own `a2a-db upgrade`, which runtimes before sdk-migrations.ts ran. */
async function firstStartScript(url: string, old: boolean): Promise<string> {
  if (!old) {
    const store = pathToFileURL(join(PROJECT_ROOT, 'runtime/a2a/store/store.ts')).href;
    return `const { openStore } = await import(${JSON.stringify(store)}); await openStore(${JSON.stringify(url)}); console.log('opened');`;
  }
  const entry = createRequire(import.meta.url).resolve('@a2a-js/sdk/server/database');
  const run = pathToFileURL(join(dirname(entry), '..', '..', 'cli', 'run.js')).href;
  return `const { run } = await import(${JSON.stringify(run)}); process.exitCode = await run(['upgrade', '--url', ${JSON.stringify(url)}], {}, console);`;
}

/** Run a first start on `url` in a process of its own, paused before the statement containing `at`; resolves when it is. */
async function startPausedAt(url: string, at: string, dir: string, o: { old?: boolean } = {}) {
  const hook = join(dir, 'pause.mjs');
  writeFileSync(hook, PAUSE_HOOK);
  const script = await firstStartScript(url, o.old ?? false);
  const tsx = join(PROJECT_ROOT, 'node_modules/tsx/dist/esm/index.mjs');
  const child = spawn(process.execPath, ['--import', tsx, '--import', pathToFileURL(hook).href, '--input-type=module', '-e', script], {
    env: { ...process.env, PAUSE_AT: at },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanup.push(async () => child.kill('SIGKILL'));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('paused before: ')) resolve();
    });
    void exited.then((how) => reject(new Error(`the first start ended (${how}) before it reached '${at}': ${out}${err}`)));
  });
  return { child, exited, out: () => out };
}

describe("the A2A SDK's migrations on a SQLite store", () => {
  it('a first start killed by SIGKILL in the middle of them leaves a store the next start migrates and opens', async () => {
    const dir = tmp('sdk-migration-kill-');
    const file = join(dir, 'store.db');
    const url = `sqlite:${file}`;
    // 0001_create_tasks makes the table, then two indexes: stopped before the second, the table
    // and the first index are written and its ledger row is not.
    const first = await startPausedAt(url, 'create index "tasks_scope_context_updated_idx"', dir);
    expect(first.out()).toMatch(/paused before: create index "tasks_scope_context_updated_idx"/);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    // Nothing of the stopped migration stayed (before: tasks and its first index, unrecorded).
    const left = schemaOf(file, () => true);
    expect(left.objects.map((o) => o.name)).not.toContain('tasks');
    expect(left.objects.map((o) => o.name)).not.toContain('tasks_scope_updated_idx');
    // The next start migrates and opens it (before: "table "tasks" already exists", E-STORE-002, at every start).
    const store = await openStore(url);
    cleanup.push(() => store.close());
    const t = task();
    await store.tasks.save(t, caller);
    expect((await store.tasks.load(t.id, caller))?.id).toBe(t.id);
    expect(schemaOf(file, () => true).ledgers).toEqual({
      a2a_push_notification_configs_migrations: ['0001_create_push_notification_configs'],
      a2a_tasks_migrations: ['0001_create_tasks'],
    });
  }, 60_000);

  it("leaves the tables, indexes, ledgers and lock table of the SDK's own a2a-db upgrade, and opens a store that upgrade made", async () => {
    const ours = join(tmp('sdk-migration-ours-'), 'store.db');
    const theirs = join(tmp('sdk-migration-theirs-'), 'store.db');
    const store = await openStore(`sqlite:${ours}`);
    await store.close();
    const run = await sdkRun();
    const errors: unknown[] = [];
    expect(await run(['upgrade', '--url', `sqlite:${theirs}`], {}, { log: () => undefined, error: (...a) => errors.push(...a) })).toBe(0);
    expect(errors).toEqual([]);
    const sdkOnly = (table: string) => !table.startsWith('murmur_');
    const want = schemaOf(theirs, sdkOnly);
    expect(want.objects.length).toBeGreaterThan(0);
    expect(schemaOf(ours, sdkOnly)).toEqual(want);
    // A store the SDK's runner migrated (every store before this change) opens as it is.
    const again = await openStore(`sqlite:${theirs}`);
    cleanup.push(() => again.close());
    const t = task();
    await again.tasks.save(t, caller);
    expect((await again.tasks.load(t.id, caller))?.id).toBe(t.id);
    expect(schemaOf(theirs, sdkOnly)).toEqual(want);
  }, 60_000);
});

describe("a store an older runtime's first start left half-migrated (the SDK's own runner, killed mid-migration)", () => {
  /** The real old sequence: `a2a-db upgrade` (kysely's plain SQLite dialect: no transaction) killed by SIGKILL before the statement containing `at`. */
  async function brokenByOldRunner(at: string): Promise<string> {
    const dir = tmp('sdk-migration-old-');
    const file = join(dir, 'store.db');
    const first = await startPausedAt(`sqlite:${file}`, at, dir, { old: true });
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    return file;
  }

  it.each([
    [
      'before its ledger row: the table and both indexes, unrecorded',
      'insert into "a2a_tasks_migrations"',
      ['tasks', 'tasks_scope_context_updated_idx', 'tasks_scope_updated_idx'],
    ],
    [
      'before its second index: the table and its first index, unrecorded',
      'create index "tasks_scope_context_updated_idx"',
      ['tasks', 'tasks_scope_updated_idx'],
    ],
  ])(
    'stopped %s: the next start records the migration and opens it',
    async (_when, at, left) => {
      const file = await brokenByOldRunner(at);
      const broken = schemaOf(file, (t) => t === 'tasks');
      expect(broken.objects.map((o) => o.name)).toEqual(left);
      expect(schemaOf(file, () => true).ledgers).toEqual({
        a2a_push_notification_configs_migrations: ['0001_create_push_notification_configs'],
        a2a_tasks_migrations: [],
      });
      // Before: "table "tasks" already exists" (E-STORE-002) at every start.
      const store = await openStore(`sqlite:${file}`);
      cleanup.push(() => store.close());
      const t = task();
      await store.tasks.save(t, caller);
      expect((await store.tasks.load(t.id, caller))?.id).toBe(t.id);
      // Now as a store migrated in one go: the SDK's upgrade of a fresh file.
      const fresh = join(tmp('sdk-migration-fresh-'), 'store.db');
      const run = await sdkRun();
      expect(await run(['upgrade', '--url', `sqlite:${fresh}`], {}, { log: () => undefined, error: () => undefined })).toBe(0);
      const sdkOnly = (table: string) => !table.startsWith('murmur_');
      expect(schemaOf(file, sdkOnly).objects).toEqual(schemaOf(fresh, sdkOnly).objects);
      expect(schemaOf(file, () => true).ledgers).toMatchObject({ a2a_tasks_migrations: ['0001_create_tasks'] });
    },
    60_000,
  );

  it.each([
    [
      'a column of its own',
      'ALTER TABLE "tasks" ADD COLUMN "note" text',
      /: it is CREATE TABLE "tasks" \(.*"note" text.* where the migration makes CREATE TABLE "tasks"/,
    ],
    ['an index of its own', 'CREATE INDEX "mine" ON "tasks" ("id")', /: its index "mine" is not one the migration makes/],
  ])(
    'a "tasks" table the migration did not make (%s) is refused, naming the file, the table and the fix (E-STORE-006); the file is left as it was',
    async (_what, change, why) => {
      const file = await brokenByOldRunner('insert into "a2a_tasks_migrations"');
      const db = new Database(file);
      db.exec(change);
      db.close();
      const before = schemaOf(file, () => true);
      const err = await openStore(`sqlite:${file}`).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'E-STORE-006',
        location: { file },
        message: expect.stringMatching(/^the SQLite store .*store\.db has table "tasks" without the ledger row of the A2A SDK's migration 0001_create_tasks/),
        hint: expect.stringContaining(`move ${file} aside`),
      });
      expect((err as Error).message).toMatch(why);
      expect((err as { hint: string }).hint).toContain(`sqlite3 ${file} 'DROP TABLE "tasks"'`);
      expect(schemaOf(file, () => true)).toEqual(before);
    },
    60_000,
  );
});

describe("parseSdkSchema: the SDK's rendered migrations (a2a-db upgrade --sql --dialect sqlite)", () => {
  it("reads each store's ledger and each migration's statements from the SDK's own rendering", async () => {
    const logged: string[] = [];
    expect(await (await sdkRun())(['upgrade', '--sql', '--dialect', 'sqlite'], {}, { log: (s) => logged.push(String(s)), error: () => undefined })).toBe(0);
    const stores = parseSdkSchema(logged.join('\n'));
    expect(stores.map((s) => [s.id, s.ledger, s.migrations.map((m) => m.name)])).toEqual([
      ['push-notification-configs', 'a2a_push_notification_configs_migrations', ['0001_create_push_notification_configs']],
      ['tasks', 'a2a_tasks_migrations', ['0001_create_tasks']],
    ]);
    expect(stores[1]!.migrations[0]!.statements.map((s) => s.split(' (')[0])).toEqual([
      'create table "tasks"',
      'create index "tasks_scope_updated_idx" on "tasks"',
      'create index "tasks_scope_context_updated_idx" on "tasks"',
    ]);
  });

  const ledger = 'create table if not exists "a2a_tasks_migrations" ("name" varchar(255) not null primary key, "timestamp" varchar(255) not null);';
  const record = `insert into "a2a_tasks_migrations" ("name", "timestamp") values ('0001_create_tasks', '2026-01-01T00:00:00.000Z');`;
  it.each([
    ['a statement before any store', `create table "x" ("a" text);`, /statement 1 comes before any '-- store:' line/],
    [
      'a store without its ledger first',
      `-- store: tasks\n\ncreate table "x" ("a" text);`,
      /statement 1 of store 'tasks' is not its ledger's 'create table if not exists'/,
    ],
    [
      'statements no ledger row records',
      `-- store: tasks\n\n${ledger}\n\ncreate table "x" ("a" text);`,
      /store 'tasks' ends with 1 statement\(s\) no ledger row records/,
    ],
    [
      'a statement without its semicolon',
      `-- store: tasks\n\n${ledger}\n\ncreate table "x" ("a" text)\n\n${record}`,
      /statement 2 of store 'tasks' does not end/,
    ],
    ['no store at all', '-- Nothing to do: every selected store is already at latest.', /no '-- store:' block/],
  ])('refuses %s, saying where', (_what, script, message) => {
    expect(() => parseSdkSchema(script)).toThrow(message);
  });
});
