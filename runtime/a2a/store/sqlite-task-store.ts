/**
 * The embedded SQLite store's task save: the SDK's `DatabaseTaskStore` with `save` writing the
 * same row by one SQL text compiled once. The SDK's `save` builds its upsert with Kysely's builder
 * and compiles it on every call (`insertInto(...).values(row).onConflict(... doUpdateSet(...))`):
 * on `mur serve`, two to three saves a task, that was about half of the save's main-thread time,
 * and the builder's functions were among the first hundreds of tasks' TurboFan compiles (issue 42).
 *
 * Here the same builder chain is compiled once, when the store is made, from a probe row whose
 * every value is distinct; the SQL is kept only if Kysely took the parameters in the order this
 * file lays them out (the row's columns, then the updated ones), and each save runs that SQL with
 * the task's values (`CompiledQuery.raw`) through the same Kysely instance, so it takes the
 * connection's lock like every other query and never lands inside another caller's transaction.
 * The SQL text is the SDK's own (same builder, table, conflict target and updated columns).
 *
 * The row is the SDK's `toTaskRow`, which it does not export, made from what it does export
 * (`Task.toJSON`, `taskStateToJSON`, `resolveUserScope`); the scope is its `callerScope` (the
 * context's tenant or '', the owner resolver's answer). test/a2a/sqlite-task-store.test.ts saves
 * the same tasks through the SDK's save and this one into two files and compares them column by
 * column, so a change of the SDK's encoding fails there. A key that is not a string (the SDK
 * refuses it) and a Kysely that compiled the probe differently go to the SDK's own save.
 *
 * `load`, `list` and everything else are the SDK's. PostgreSQL keeps the SDK's store (store.ts).
 */
import { CompiledQuery, type Kysely } from 'kysely';
import { Task, taskStateToJSON } from '@a2a-js/sdk';
import { resolveUserScope, type OwnerResolver, type ServerCallContext } from '@a2a-js/sdk/server';
import { DatabaseTaskStore, TASK_TABLE, type DatabaseTaskStoreOptions } from '@a2a-js/sdk/server/database';

/** The upsert's conflict target: the task table's primary key (the SDK's `TASK_TABLE_KEY_COLUMNS`). */
const KEY_COLUMNS = ['tenant', 'owner', 'id'] as const;
/** What a save of an existing task replaces: every other column, in the SDK's `toTaskRow` order. */
const REPLACED_COLUMNS = ['context_id', 'status_last_updated', 'status_state', 'status', 'artifacts', 'history', 'metadata', 'protocol_version'] as const;
const ROW_COLUMNS = [...KEY_COLUMNS, ...REPLACED_COLUMNS] as const;
/** The payload format the SDK writes in `protocol_version` (its `PAYLOAD_FORMAT` of task rows). */
const PAYLOAD_FORMAT = '1.0';

/** The parts of `Task.toJSON`'s answer that are columns. */
interface TaskPayload {
  status?: unknown;
  artifacts?: unknown;
  history?: unknown;
  metadata?: unknown;
}

/** The SDK's `statusLastUpdated`: the status timestamp in epoch milliseconds, 0 when absent or unreadable. */
function statusLastUpdated(timestamp: string | undefined): number {
  if (!timestamp) return 0;
  const parsed = Date.parse(timestamp);
  return Number.isNaN(parsed) ? 0 : parsed;
}

/** The SDK's `encode`: JSON, or NULL for a field `toJSON` left out. */
const encode = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/**
 * The upsert's parameters: the row in `ROW_COLUMNS` order, then the replaced columns again (the
 * `DO UPDATE SET` values), as Kysely lays out the SDK's builder chain.
 */
function upsertValues(tenant: string, owner: string, task: Task): unknown[] {
  const payload = Task.toJSON(task) as TaskPayload;
  const replaced = [
    task.contextId || '',
    statusLastUpdated(task.status?.timestamp),
    task.status ? taskStateToJSON(task.status.state) : null,
    encode(payload.status),
    encode(payload.artifacts),
    encode(payload.history),
    encode(payload.metadata),
    PAYLOAD_FORMAT,
  ];
  return [tenant, owner, task.id, ...replaced, ...replaced];
}

/**
 * The SDK's upsert compiled by Kysely from a probe row, or undefined when its parameters are not in
 * `upsertValues`' order (then every save is the SDK's own).
 */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as the store's: the task table is the SDK's migrations'
function compileUpsert(db: Kysely<any>, table: string): string | undefined {
  // Each value distinct, so a parameter in another place cannot pass for the expected one.
  const probe = Object.fromEntries(ROW_COLUMNS.map((c) => [c, `\u0000probe:${c}`]));
  const replaced = Object.fromEntries(REPLACED_COLUMNS.map((c) => [c, probe[c]]));
  const compiled = db
    .insertInto(table)
    .values(probe)
    .onConflict((oc) => oc.columns([...KEY_COLUMNS]).doUpdateSet(replaced))
    .compile();
  const expected = [...ROW_COLUMNS, ...REPLACED_COLUMNS].map((c) => probe[c]);
  const inOrder = compiled.parameters.length === expected.length && compiled.parameters.every((v, i) => v === expected[i]);
  return inOrder ? compiled.sql : undefined;
}

export class SqliteTaskStore extends DatabaseTaskStore {
  // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as the store's: the task table is the SDK's migrations'
  readonly #db: Kysely<any>;
  readonly #owner: OwnerResolver;
  /** The upsert's SQL, or undefined if Kysely compiled it in an order this file does not lay out. */
  readonly #upsert: string | undefined;

  // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as the store's: the task table is the SDK's migrations'
  constructor(db: Kysely<any>, options: DatabaseTaskStoreOptions = {}) {
    super(db, options);
    this.#db = db;
    this.#owner = options.ownerResolver ?? resolveUserScope;
    this.#upsert = compileUpsert(db, options.tableName ?? TASK_TABLE);
  }

  /** Whether saves run the SQL compiled once (false: Kysely compiled the probe otherwise, saves are the SDK's). */
  get compiledOnce(): boolean {
    return this.#upsert !== undefined;
  }

  override async save(task: Task, context: ServerCallContext): Promise<void> {
    // The SDK's callerScope.
    const tenant = context.tenant ?? '';
    const owner = this.#owner(context);
    if (this.#upsert === undefined || typeof tenant !== 'string' || typeof owner !== 'string' || typeof task.id !== 'string') {
      // The SDK's own save, which also refuses a key that is not a string with its own error.
      return super.save(task, context);
    }
    await this.#db.executeQuery(CompiledQuery.raw(this.#upsert, upsertValues(tenant, owner, task)));
  }
}
