/**
 * Which replica runs each task (`murmur_task_runner`), for replicas sharing one PostgreSQL store.
 * A replica claims a task (one row: task id → its replica id) before the task's first save, so any
 * replica that sees the task in the store also sees who runs it. Whether that runner is still alive
 * is the replica bus's question (its advisory lock); a task whose runner is gone can never finish
 * and is failed with a reason, by whichever replica notices first (at start-up for all of them,
 * and lazily when a caller asks about one).
 *
 * The claim wraps the SDK's TaskStore rather than changing it: the SDK's tables stay the SDK's.
 */
import type { Kysely } from 'kysely';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { ServerCallContext as Ctx } from '@a2a-js/sdk/server';
import { DatabaseTaskStore, TASK_TABLE } from '@a2a-js/sdk/server/database';
import type { Task } from '@a2a-js/sdk';
import { RESUME_TABLE, RUNNER_TABLE } from './murmur-schema.ts';
import { agentMessage, fromCoreState, toCoreState } from '../core/wire.ts';
import { isTerminal } from '../core/executor.ts';

export const UNFINISHED = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];

/** Whether a task as stored is final (completed, failed, canceled, rejected). */
export function isFinal(t: Task): boolean {
  const s = fromCoreState(t.status?.state);
  return s !== undefined && isTerminal(s);
}

/**
 * `inner`, with every task claimed for `replica` before its first save. The set of claimed ids
 * holds only unfinished tasks (an id leaves it with its final save), so it stays bounded by the
 * tasks this replica runs at once.
 */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
export function claimingStore(inner: TaskStore, db: Kysely<any>, replica: string): TaskStore {
  const claimed = new Set<string>();
  return {
    async save(task: Task, ctx: ServerCallContext) {
      if (!claimed.has(task.id)) {
        claimed.add(task.id);
        await db
          .insertInto(RUNNER_TABLE)
          .values({ task_id: task.id, replica })
          .onConflict((oc) => oc.column('task_id').doNothing())
          .execute();
      }
      await inner.save(task, ctx);
      if (isFinal(task)) claimed.delete(task.id);
    },
    load: (id, ctx) => inner.load(id, ctx),
    list: (p, ctx) => inner.list(p, ctx),
  } as TaskStore;
}

/** The replica that claimed `taskId`, if any. */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
export async function runnerOf(db: Kysely<any>, taskId: string): Promise<string | undefined> {
  const r = (await db.selectFrom(RUNNER_TABLE).select('replica').where('task_id', '=', taskId).executeTakeFirst()) as { replica: string } | undefined;
  return r?.replica;
}

/**
 * Mark unfinished tasks `failed` with `reason`: every one, or (with `alive`) those whose runner is
 * not alive or unknown. Each rewrite is the SDK store's load + save under the task's own scope, and
 * only if the task is still unfinished then. Returns how many. A task waiting for input with a
 * resume point (resume-points.ts) is not one of them: another process continues it.
 */
export async function failOrphans(
  // biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
  db: Kysely<any>,
  reason: string,
  o: { alive?: (replica: string) => Promise<boolean>; taskId?: string } = {},
): Promise<number> {
  let q = db
    .selectFrom(TASK_TABLE)
    .leftJoin(RUNNER_TABLE, `${RUNNER_TABLE}.task_id`, `${TASK_TABLE}.id`)
    .leftJoin(RESUME_TABLE, `${RESUME_TABLE}.task_id`, `${TASK_TABLE}.id`)
    .select([`${TASK_TABLE}.tenant as tenant`, `${TASK_TABLE}.owner as owner`, `${TASK_TABLE}.id as id`, `${RUNNER_TABLE}.replica as replica`])
    .where(`${TASK_TABLE}.status_state`, 'in', UNFINISHED)
    .where((eb) => eb.or([eb(`${TASK_TABLE}.status_state`, '!=', 'TASK_STATE_INPUT_REQUIRED'), eb(`${RESUME_TABLE}.task_id`, 'is', null)]));
  if (o.taskId) q = q.where(`${TASK_TABLE}.id`, '=', o.taskId);
  const rows = (await q.execute()) as Array<{ tenant: string; owner: string; id: string; replica: string | null }>;
  const alive = new Map<string, boolean>();
  let n = 0;
  for (const row of rows) {
    if (o.alive && row.replica) {
      if (!alive.has(row.replica)) alive.set(row.replica, await o.alive(row.replica));
      if (alive.get(row.replica)) continue;
    }
    const scoped = new DatabaseTaskStore(db, { ownerResolver: () => row.owner });
    const ctx = new Ctx(row.tenant ? { tenant: row.tenant } : {});
    const task = await scoped.load(row.id, ctx);
    if (!task || isFinal(task)) continue;
    task.status = { state: toCoreState('failed'), message: agentMessage(reason, task.id, task.contextId), timestamp: new Date().toISOString() };
    await scoped.save(task, ctx);
    n++;
  }
  return n;
}
