/**
 * Resume points (`murmur_resume_point`, migration 0004 in murmur-schema.ts): while a task waits in
 * `input-required`, what its executor needs to continue it in another process — a `mur serve`
 * stopped by SIGTERM (sleep, a rollout) or killed, and started again on the same store. One row per
 * waiting task, written when it asks and deleted once it has ended; the point itself is JSON the
 * task machine hands over and reads back whole (docs/a2a.md "Restart").
 *
 * Which process continues a waiting task: on a store of its own, the one that starts next. Replicas
 * on one PostgreSQL store claim it in `murmur_task_runner` (task-runners.ts) from a runner that is
 * gone, one compare-and-set per task, so exactly one replica takes each.
 */
import { sql, type Kysely } from 'kysely';
import { TASK_TABLE } from '@a2a-js/sdk/server/database';
import { RESUME_TABLE, RUNNER_TABLE } from './murmur-schema.ts';

export { RESUME_TABLE } from './murmur-schema.ts';

const INPUT_REQUIRED = 'TASK_STATE_INPUT_REQUIRED';
const FINAL = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];

/** A task waiting for input with a resume point, and its owner scope (the SDK task table's). */
export interface WaitingTask {
  id: string;
  tenant: string;
  owner: string;
  /** When it asked, ms since the epoch. */
  askedAt: number;
}

export interface ResumeStore {
  /** Keep `point` (JSON text) for task `taskId`, asked at `askedAt`; replaces an earlier one. */
  save(taskId: string, askedAt: number, point: string): Promise<void>;
  /** The point of `taskId`, if one is kept. */
  load(taskId: string): Promise<{ askedAt: number; point: string } | undefined>;
  drop(taskId: string): Promise<void>;
  /**
   * The tasks waiting for input with a point that this process is to continue (claimed for it on
   * a shared store); points of tasks that have ended are deleted first.
   */
  waiting(): Promise<WaitingTask[]>;
}

export interface ResumeClaim {
  /** This replica's id (replica-bus.ts); tasks are claimed for it. */
  replica: string;
  /** Whether another replica is alive: its waiting tasks stay its own. */
  alive: (replica: string) => Promise<boolean>;
}

// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
export function resumeStore(db: Kysely<any>, claim?: ResumeClaim): ResumeStore {
  return {
    async save(taskId, askedAt, point) {
      const row = { task_id: taskId, asked_at: askedAt, bytes: Buffer.byteLength(point), point };
      await db
        .insertInto(RESUME_TABLE)
        .values(row)
        .onConflict((oc) => oc.column('task_id').doUpdateSet({ asked_at: row.asked_at, bytes: row.bytes, point: row.point }))
        .execute();
    },
    async load(taskId) {
      const r = (await db.selectFrom(RESUME_TABLE).select(['asked_at', 'point']).where('task_id', '=', taskId).executeTakeFirst()) as
        | { asked_at: number | string; point: string }
        | undefined;
      return r ? { askedAt: Number(r.asked_at), point: r.point } : undefined;
    },
    async drop(taskId) {
      await db.deleteFrom(RESUME_TABLE).where('task_id', '=', taskId).execute();
    },
    async waiting() {
      await sql`DELETE FROM ${sql.table(RESUME_TABLE)} WHERE task_id IN (SELECT id FROM ${sql.table(TASK_TABLE)} WHERE status_state IN (${sql.join(FINAL)}))`.execute(
        db,
      );
      const rows = (await db
        .selectFrom(RESUME_TABLE)
        .innerJoin(TASK_TABLE, `${TASK_TABLE}.id`, `${RESUME_TABLE}.task_id`)
        .leftJoin(RUNNER_TABLE, `${RUNNER_TABLE}.task_id`, `${RESUME_TABLE}.task_id`)
        .select([
          `${RESUME_TABLE}.task_id as id`,
          `${RESUME_TABLE}.asked_at as asked_at`,
          `${TASK_TABLE}.tenant as tenant`,
          `${TASK_TABLE}.owner as owner`,
          `${RUNNER_TABLE}.replica as replica`,
        ])
        .where(`${TASK_TABLE}.status_state`, '=', INPUT_REQUIRED)
        .orderBy(`${RESUME_TABLE}.asked_at`)
        .execute()) as Array<{ id: string; asked_at: number | string; tenant: string; owner: string; replica: string | null }>;
      const out: WaitingTask[] = [];
      for (const r of rows) {
        if (claim && !(await claimed(db, claim, r.id, r.replica))) continue;
        out.push({ id: r.id, tenant: r.tenant, owner: r.owner, askedAt: Number(r.asked_at) });
      }
      return out;
    },
  };
}

/** Claims task `id` for this replica from `from` (its runner, gone) or from nobody; whether this replica has it now. */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> as in Kysely's own Migration interface: the tables are the migrations' (murmur-schema.ts), for SQLite and PostgreSQL alike
async function claimed(db: Kysely<any>, claim: ResumeClaim, id: string, from: string | null): Promise<boolean> {
  if (from === claim.replica) return true;
  if (from === null) {
    await db
      .insertInto(RUNNER_TABLE)
      .values({ task_id: id, replica: claim.replica })
      .onConflict((oc) => oc.column('task_id').doNothing())
      .execute();
  } else {
    if (await claim.alive(from)) return false;
    await db.updateTable(RUNNER_TABLE).set({ replica: claim.replica }).where('task_id', '=', id).where('replica', '=', from).execute();
  }
  const now = (await db.selectFrom(RUNNER_TABLE).select('replica').where('task_id', '=', id).executeTakeFirst()) as { replica: string } | undefined;
  return now?.replica === claim.replica;
}
