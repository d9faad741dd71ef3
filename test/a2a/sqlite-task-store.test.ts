/**
 * The embedded SQLite store's task save (runtime/a2a/store/sqlite-task-store.ts, issue 42 §2) on
 * real SQLite files: it writes exactly the row the SDK's own `DatabaseTaskStore.save` writes (the
 * same tasks saved through each into two files, compared column by column with their SQLite types,
 * and by the same SQL text), the SDK's `load` and `list` read back what it wrote, `mur serve`'s
 * store saves that way without building or compiling a query per save, and a save never lands
 * inside a transaction another caller holds on the store's connection.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import Database from 'better-sqlite3';
import { InsertQueryBuilder, Kysely, SqliteDialect, sql } from 'kysely';
import { Role, Task, TaskState, type Artifact, type Message, type Part } from '@a2a-js/sdk';
import { ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { DatabaseTaskStore, TASK_TABLE } from '@a2a-js/sdk/server/database';
import { openStore } from '../../runtime/a2a/store/store.ts';
import { SqliteTaskStore } from '../../runtime/a2a/store/sqlite-task-store.ts';
import { dataPart, textPart } from '../../runtime/a2a/core/wire.ts';
import { tmp } from '../loop/kit.ts';

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

const caller = (userName: string | undefined, tenant?: string) =>
  new ServerCallContext({ ...(userName ? { user: { isAuthenticated: true, userName } } : {}), ...(tenant !== undefined ? { tenant } : {}) });
/** Two owners in two tenants (the default '' and 'acme'), and a caller with no user (the SDK's 'unknown'). */
const CALLERS = [caller('apikey:ann'), caller('apikey:bob'), caller('apikey:ann', 'acme'), caller('apikey:bob', 'acme'), caller(undefined)];

const filePart = (bytes: Buffer, filename: string, mediaType: string): Part => ({
  content: { $case: 'raw', value: bytes },
  metadata: undefined,
  filename,
  mediaType,
});
const urlPart = (url: string): Part => ({
  content: { $case: 'url', value: url },
  metadata: { source: 'crawler' },
  filename: 'page.html',
  mediaType: 'text/html',
});

/** A message whose id follows from its content, so the corpus is the same on every call. */
function message(role: Role, parts: Part[], extra: Partial<Message> = {}): Message {
  const messageId = `m-${role}-${Buffer.from(JSON.stringify(parts.map((p) => p.content?.value)))
    .toString('base64url')
    .slice(0, 32)}`;
  return { messageId, contextId: 'ctx-1', taskId: 't', role, parts, metadata: undefined, extensions: [], referenceTaskIds: [], ...extra };
}

function task(id: string, extra: Partial<Task> = {}): Task {
  return {
    id,
    contextId: 'ctx-1',
    status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: '2026-12-06T09:00:00.123Z' },
    artifacts: [],
    history: [message(Role.ROLE_USER, [textPart('hello')])],
    metadata: undefined,
    ...extra,
  };
}

const artifact = (artifactId: string, parts: Part[], extra: Partial<Artifact> = {}): Artifact => ({
  artifactId,
  name: `${artifactId}.txt`,
  description: '',
  parts,
  metadata: undefined,
  extensions: [],
  ...extra,
});

/** Every kind of task the SDK's row encodes, each a field or value that could be encoded otherwise. */
function corpus(): Task[] {
  const states = Object.values(TaskState).filter((s): s is TaskState => typeof s === 'number');
  return [
    task('plain-text'),
    task('artifacts', {
      artifacts: [
        artifact('answer', [textPart('forty-two'), dataPart({ n: 42, list: [1, 'two', null], nested: { ok: true } })], {
          description: 'the answer',
          metadata: { score: 0.5 },
        }),
        artifact('files', [filePart(Buffer.from([0, 1, 2, 254, 255]), 'blob.bin', 'application/octet-stream'), urlPart('https://example.com/a?b=c&d=é')], {
          extensions: ['https://example.com/ext/v1'],
        }),
      ],
    }),
    task('metadata', { metadata: { origin: 'peer', trust: { level: 2, scopes: ['read', 'write'] }, empty: {}, nothing: null, big: 2 ** 53 - 1 } }),
    task('history', {
      history: [
        message(Role.ROLE_USER, [textPart('first question')], { metadata: { client: 'cli' } }),
        message(Role.ROLE_AGENT, [textPart('a thought'), dataPart({ tool: 'echo', args: ['x'] })], { extensions: ['urn:x'] }),
        message(Role.ROLE_USER, [textPart('second question')], { referenceTaskIds: ['plain-text', 'metadata'] }),
        message(Role.ROLE_AGENT, [textPart('the answer')], { contextId: '', taskId: '' }),
      ],
    }),
    task('non-ascii-日本', {
      contextId: 'contexte-é',
      history: [message(Role.ROLE_USER, [textPart('héllo — 日本語 🐝 "quoted" \\ back\u2028line\u0000nul\ttab')])],
      metadata: { ключ: 'значение 🐝' },
    }),
    task('status-message', {
      status: {
        state: TaskState.TASK_STATE_INPUT_REQUIRED,
        message: message(Role.ROLE_AGENT, [textPart('which file do you mean?')], { metadata: { prompt: true } }),
        timestamp: '2026-12-06T09:00:01Z',
      },
    }),
    ...states.map((state, i) => task(`state-${state}`, { status: { state, message: undefined, timestamp: `2026-12-06T09:00:0${i % 10}.000Z` } })),
    task('no-status', { status: undefined }),
    task('no-timestamp', { status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined } }),
    task('bad-timestamp', { status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: 'not a date' } }),
    task('no-context', { contextId: '', history: [] }),
    // Not a well-formed task, but one the SDK still writes (its `contextId || ''`).
    task('undefined-context', { contextId: undefined as unknown as string }),
    task('empty-metadata', { metadata: {}, history: [] }),
  ];
}

/** The same task later: another state, more history, an artifact, its metadata gone, another context. */
function updated(t: Task): Task {
  return {
    ...t,
    contextId: `${t.contextId}-2`,
    status: { state: TaskState.TASK_STATE_FAILED, message: message(Role.ROLE_AGENT, [textPart('gave up')]), timestamp: '2026-12-06T09:05:00Z' },
    history: [...t.history, message(Role.ROLE_AGENT, [textPart('later')])],
    artifacts: [artifact('late', [textPart('late artifact')])],
    metadata: undefined,
  };
}

/** Two files migrated by openStore, each then on a Kysely of the test's own that lists the SQL it runs. */
async function twoFiles(name: string) {
  const files = [join(tmp(`${name}-sdk-`), 's.db'), join(tmp(`${name}-ours-`), 's.db')] as const;
  for (const f of files) await (await openStore(`sqlite:${f}`)).close();
  return files.map((file) => {
    const statements: string[] = [];
    const db = new Kysely({
      dialect: new SqliteDialect({ database: new Database(file) }),
      log: (e) => {
        if (e.level === 'query') statements.push(e.query.sql);
      },
    });
    cleanup.push(() => db.destroy());
    return { file, db, statements };
  });
}

/** Every row of the task table, each column with its value and its SQLite storage class. */
function rows(file: string): Record<string, unknown>[] {
  const db = new Database(file, { readonly: true });
  try {
    const columns = (db.pragma(`table_info(${TASK_TABLE})`) as { name: string }[]).map((c) => c.name);
    const select = columns.map((c) => `"${c}", typeof("${c}") AS "${c}:type"`).join(', ');
    return db.prepare(`SELECT ${select} FROM ${TASK_TABLE} ORDER BY tenant, owner, id`).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** Each task of the corpus saved for every caller, then each task updated for two of them. */
async function saveAll(store: TaskStore): Promise<void> {
  for (const ctx of CALLERS) for (const t of corpus()) await store.save(t, ctx);
  for (const ctx of [CALLERS[0]!, CALLERS[3]!]) for (const t of corpus()) await store.save(updated(t), ctx);
}

describe('the SQLite task store', () => {
  it("writes exactly the SDK's row: every task, state, owner and tenant, and an update of an existing row, column by column in two files", async () => {
    const [sdk, ours] = await twoFiles('task-parity');
    const store = new SqliteTaskStore(ours!.db);
    expect(store.compiledOnce).toBe(true);
    await saveAll(new DatabaseTaskStore(sdk!.db));
    await saveAll(store);

    const expected = rows(sdk!.file);
    const actual = rows(ours!.file);
    expect(expected.length).toBe(CALLERS.length * corpus().length);
    expect(actual.length).toBe(expected.length);
    for (let i = 0; i < expected.length; i++) {
      const where = `${expected[i]!.tenant}/${expected[i]!.owner}/${expected[i]!.id}`;
      for (const [column, value] of Object.entries(expected[i]!)) expect(actual[i]![column], `${where} ${column}`).toEqual(value);
    }
    // The same statement: table, columns, conflict target and updated columns.
    const upserts = (s: string[]) => [...new Set(s.filter((q) => /^insert/i.test(q)))];
    expect(upserts(sdk!.statements)).toHaveLength(1);
    expect(upserts(ours!.statements)).toEqual(upserts(sdk!.statements));
  });

  it("the SDK's load and list read back what it wrote, as they read the SDK's own rows", async () => {
    const [sdk, ours] = await twoFiles('task-readback');
    await saveAll(new DatabaseTaskStore(sdk!.db));
    await saveAll(new SqliteTaskStore(ours!.db));
    const fromSdk = new DatabaseTaskStore(sdk!.db);
    const fromOurs = new DatabaseTaskStore(ours!.db);
    for (const [i, ctx] of CALLERS.entries()) {
      for (const t of corpus()) {
        const loaded = await fromOurs.load(t.id, ctx);
        expect(loaded, `${t.id} for caller ${i}`).toEqual(await fromSdk.load(t.id, ctx));
        // What was saved last for this caller, as the SDK's JSON encoding carries it.
        const last = i === 0 || i === 3 ? updated(t) : t;
        expect(loaded).toEqual(Task.fromJSON(Task.toJSON(last) as object));
      }
      for (const params of [
        { includeArtifacts: true },
        { historyLength: 0 },
        { status: TaskState.TASK_STATE_COMPLETED, pageSize: 3 },
        { contextId: 'contexte-é' },
      ]) {
        const request = { tenant: '', contextId: '', pageSize: 100, pageToken: '', ...params } as Parameters<TaskStore['list']>[0];
        expect(await fromOurs.list(request, ctx), `list ${JSON.stringify(params)} for caller ${i}`).toEqual(await fromSdk.list(request, ctx));
      }
    }
    expect((await fromOurs.list({ includeArtifacts: true, pageSize: 100 } as Parameters<TaskStore['list']>[0], CALLERS[1]!)).tasks).toHaveLength(
      corpus().length,
    );
  });

  it("mur serve's SQLite store builds and compiles no query per task save", async () => {
    const store = await openStore(`sqlite:${join(tmp('task-compile-'), 's.db')}`);
    cleanup.push(() => store.close());
    const compiles = vi.spyOn(InsertQueryBuilder.prototype, 'compile');
    cleanup.push(() => compiles.mockRestore());
    const ctx = CALLERS[2]!;
    for (let i = 0; i < 20; i++) {
      await store.tasks.save(task(`t${i}`, { status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } }), ctx);
      await store.tasks.save(task(`t${i}`), ctx);
    }
    expect(compiles).not.toHaveBeenCalled();
    compiles.mockRestore();
    const listed = await store.tasks.list({ pageSize: 100 } as Parameters<TaskStore['list']>[0], ctx);
    expect(listed.totalSize).toBe(20);
    expect(listed.tasks.every((t) => t.status?.state === TaskState.TASK_STATE_COMPLETED)).toBe(true);
  });

  it('a save made while another caller holds a transaction on the connection waits for it: its rollback does not take the save with it', async () => {
    const store = await openStore(`sqlite:${join(tmp('task-tx-'), 's.db')}`);
    cleanup.push(() => store.close());
    const ctx = CALLERS[0]!;
    let save: Promise<void> | undefined;
    await expect(
      store.db.transaction().execute(async (tx) => {
        await tx
          .insertInto(TASK_TABLE)
          .values({ tenant: '', owner: 'apikey:ann', id: 'rolled-back', context_id: '', status_last_updated: 0, protocol_version: '1.0' })
          .execute();
        save = store.tasks.save(task('saved'), ctx);
        // A query on the transaction's connection after the save was asked for: a save that went
        // around the connection's lock would have run by the time this answers.
        await sql`SELECT count(*) FROM ${sql.table(TASK_TABLE)}`.execute(tx);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await save;
    expect(await store.tasks.load('rolled-back', ctx)).toBeUndefined();
    expect((await store.tasks.load('saved', ctx))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
