/**
 * The durable store (runtime/a2a/store/store.ts): what opening it costs at `mur serve` start-up, and
 * what one task's saves cost against the in-memory store it replaces.
 * - open: `openStore` on a new file (SDK migrations create the schema) and on an existing one
 *   (migrations find the ledger up to date), each including the first query.
 * - per task: the four saves a task makes on its way (submitted, working, the response artifact's
 *   final status, completed), each a whole-task upsert of the SDK's DatabaseTaskStore, in SQLite
 *   (WAL, synchronous=NORMAL) against the SDK's InMemoryTaskStore; arms alternate round by round.
 *
 *   node --import tsx bench/store.ts [--rounds 7] [--tasks 200]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { openStore } from '../runtime/a2a/store/store.ts';
import { agentMessage, artifact, textPart, toCoreState } from '../runtime/a2a/core/wire.ts';
import { fmtTime, fmtSpread, machineLine, paired, pairedRows, spread, table, numArg } from './paired.ts';

async function oneTask(store: TaskStore, ctx: ServerCallContext, i: number): Promise<void> {
  const id = `task-${i}-${Math.random().toString(36).slice(2)}`;
  const contextId = `ctx-${i}`;
  const user = {
    messageId: `m${i}`,
    contextId,
    taskId: id,
    role: 1,
    parts: [textPart('a question of about a hundred characters, the size of a typical short prompt to an agent.')],
  } as never;
  const t: Task = {
    id,
    contextId,
    status: { state: toCoreState('submitted'), message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [user],
    metadata: undefined,
  };
  await store.save(t, ctx);
  t.status = { state: toCoreState('working'), message: undefined, timestamp: new Date().toISOString() };
  await store.save(t, ctx);
  t.artifacts = [artifact('response', [textPart('an answer of a few hundred characters. '.repeat(8))], { name: 'response' })];
  await store.save(t, ctx);
  t.status = { state: toCoreState('completed'), message: agentMessage('done', id, contextId), timestamp: new Date().toISOString() };
  await store.save(t, ctx);
}

export async function benchStore(): Promise<string> {
  const rounds = numArg('rounds', 7);
  const tasks = numArg('tasks', 200);
  const dir = mkdtempSync(join(tmpdir(), 'store-bench-'));
  try {
    const fresh: number[] = [];
    const reopen: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const file = join(dir, `open-${r}.db`);
      const a = await openStore(`sqlite:${file}`);
      fresh.push(a.openMs);
      await a.close();
      const b = await openStore(`sqlite:${file}`);
      reopen.push(b.openMs);
      await b.close();
    }
    const sqlite = await openStore(`sqlite:${join(dir, 'tasks.db')}`);
    const ctx = new ServerCallContext({});
    const mem = new InMemoryTaskStore();
    const perTask = (store: TaskStore) => async () => {
      const t0 = performance.now();
      for (let i = 0; i < tasks; i++) await oneTask(store, ctx, i);
      return (performance.now() - t0) / tasks;
    };
    const res = await paired(
      [
        { name: 'in-memory', run: perTask(mem) },
        { name: 'sqlite', run: perTask(sqlite.tasks) },
      ],
      rounds,
    );
    await sqlite.close();
    return [
      `store: open (SDK migrations + first query) and per-task save cost (4 upserts/task, ${tasks} tasks × ${rounds} rounds)`,
      table([
        ['open, new file', fmtSpread(spread(fresh), fmtTime)],
        ['open, existing file', fmtSpread(spread(reopen), fmtTime)],
        ...pairedRows(res, fmtTime).map(([a, b, c]) => [`per task: ${a}`, b, c] as [string, string, string?]),
      ]),
      machineLine(),
      JSON.stringify({
        openNewMs: spread(fresh),
        openExistingMs: spread(reopen),
        perTaskMs: Object.fromEntries(res.arms.map((a) => [a.name, a.spread])),
        ratio: res.ratios[0]?.spread,
      }),
    ].join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchStore());
