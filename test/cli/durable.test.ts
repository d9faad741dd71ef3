/**
 * The durable store of `mur serve` (issue 13 §1): tasks live in the A2A SDK's DatabaseTaskStore on
 * an embedded SQLite file, so after `kill -9` and a restart on the same file every completed task
 * answers tasks/get and ListTasks as before, and a task that was running is `failed` with a reason
 * saying the runtime restarted. Real `mur serve` processes, real HTTP, the real SQLite engine.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn } from '../provider/scripted-provider.ts';
import { rpc, V1 } from '../a2a/helpers.ts';
import { gate, serve, type Served } from './serve-kit.ts';
import { startPostgres } from '../support/postgres.ts';
import { hookArtifact, hookCapsuleYaml, type HookDef } from '../hooks/hook-capsule.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

async function capsule(): Promise<{ dir: string; registry: string }> {
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  const dir = tmp('durable-');
  writeFileSync(
    join(dir, 'murmur.yaml'),
    capsuleYaml({ name: 'keeper', tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }),
  );
  return { dir, registry };
}

async function servedWith(c: { dir: string; registry: string }, turns: ScriptTurn[], args: string[]) {
  const provider = await startScriptedProvider(turns);
  const workRoot = tmp('durable-work-');
  const s = await serve(c.dir, { registry: c.registry, workRoot, env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY }, args });
  cleanup.push(
    () => s.stop(),
    () => provider.stop(),
  );
  return { s, provider, workRoot };
}

async function served(c: { dir: string; registry: string }, turns: ScriptTurn[], args: string[]): Promise<Served> {
  return (await servedWith(c, turns, args)).s;
}

describe('durable task store (mur serve --store)', () => {
  async function killAndRestart(storeArg: string, restartArg: string, shown: string): Promise<void> {
    const c = await capsule();
    const g = gate();
    cleanup.push(async () => g.open());
    const first = await served(c, [{ text: 'the first answer' }, { hold: g.hold, text: 'never delivered' }], ['--store', storeArg]);
    expect(first.output()).toContain(`store: ${shown}`);
    const done = await sendMessage({ peerUrl: first.url, text: 'one', allow: [first.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    if (!done.ok) return;
    const before = await rpc(first.url, 'GetTask', { id: done.taskId }, V1);
    const running = await sendMessage({ peerUrl: first.url, text: 'two', allow: [first.url], wait: false });
    expect(running.ok).toBe(true);
    if (!running.ok) return;
    await g.arrival; // the second task is in its provider call
    first.proc.kill('SIGKILL');
    await first.exited;

    const second = await served(c, [], ['--store', restartArg]);
    expect(second.output()).toMatch(/1 unfinished task\(s\) from before the restart marked failed/);
    const after = await rpc(second.url, 'GetTask', { id: done.taskId }, V1);
    expect(after.body.result).toEqual(before.body.result);
    const again = await getTask({ peerUrl: second.url, taskId: done.taskId, allow: [second.url] });
    expect(again.ok && again.state).toBe('completed');
    expect(again.ok && again.text).toBe('the first answer');

    const lost = await getTask({ peerUrl: second.url, taskId: running.taskId, allow: [second.url] });
    expect(lost.ok && lost.state).toBe('failed');
    expect(lost.ok && lost.statusText).toMatch(/runtime restarted/);

    const listed = await rpc(second.url, 'ListTasks', { includeArtifacts: true, historyLength: 10 }, V1);
    const byId = new Map<string, { status: { state: string } }>(
      (listed.body.result.tasks as Array<{ id: string; status: { state: string } }>).map((t) => [t.id, t]),
    );
    expect([...byId.keys()].sort()).toEqual([done.taskId, running.taskId].sort());
    expect(byId.get(done.taskId)).toEqual(before.body.result);
    expect(byId.get(running.taskId)!.status.state).toBe('TASK_STATE_FAILED');
  }

  it('after kill -9 and restart on the same store: completed tasks answer tasks/get and ListTasks as before; the running one is failed, saying the runtime restarted', async () => {
    const storeFile = join(tmp('durable-store-'), 'tasks.db');
    await killAndRestart(`sqlite:${storeFile}`, storeFile, `sqlite ${storeFile}`);
  }, 240_000);

  it('shared mode: the same on a PostgreSQL server (--store postgresql://…), the same SDK schema', async () => {
    const pg = await startPostgres();
    cleanup.push(() => pg.stop());
    const url = await pg.url('murmur_durable');
    await killAndRestart(url, url, `postgres ${url.replace('murmur@', '')}`);
  }, 240_000);

  it('a store that cannot be opened stops mur serve with E-STORE-002 naming the file, before it serves', async () => {
    const c = await capsule();
    const notADb = join(tmp('durable-bad-'), 'garbage.db');
    writeFileSync(notADb, 'this is not a SQLite database, just text that is long enough to have a header page\n'.repeat(100));
    await expect(served(c, [], ['--store', notADb])).rejects.toThrow(/garbage\.db[^\n]*E-STORE-002/);
  }, 240_000);

  it('a --store value that names neither a file nor PostgreSQL is refused with E-STORE-001', async () => {
    const c = await capsule();
    await expect(served(c, [], ['--store', 'mysql://somewhere/db'])).rejects.toThrow(/mysql:\/\/somewhere\/db[^\n]*E-STORE-001/);
  }, 240_000);

  it('a threaded context continues with its history after kill -9 and restart, and conversation/read returns the record of both launches', async () => {
    const reader: HookDef = {
      name: 'reader',
      contract: 'binding: on-session-end\n',
      caps: { conversation: { read: true } },
      script: { 'on-session-end': { ops: [{ op: 'read-messages', limit: 100 }], record: true } },
    };
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL, hookArtifact(reader)]);
    const dir = tmp('durable-thread-');
    writeFileSync(join(dir, 'murmur.yaml'), hookCapsuleYaml([reader], 'lifecycle:\n  conversation: threaded\n  task_acceptance: queue\n', 'threader'));
    const c = { dir, registry };
    const storeFile = join(tmp('durable-store-'), 'conv.db');
    const one = await servedWith(c, [{ text: 'noted: lantern' }], ['--store', storeFile]);
    const first = await sendMessage({ peerUrl: one.s.url, text: 'remember the word lantern', allow: [one.s.url], wait: true });
    expect(first.ok && first.state).toBe('completed');
    if (!first.ok) return;
    one.s.proc.kill('SIGKILL');
    await one.s.exited;

    const two = await servedWith(c, [{ text: 'you said lantern' }], ['--store', storeFile]);
    const follow = await sendMessage({ peerUrl: two.s.url, text: 'which word?', contextId: first.contextId, allow: [two.s.url], wait: true });
    expect(follow.ok && follow.text).toBe('you said lantern');
    // The new process sent the provider the context's history from the first launch.
    const body = JSON.stringify(two.provider.requests.at(-1)!.body);
    expect(body).toContain('remember the word lantern');
    expect(body).toContain('noted: lantern');
    expect(body.indexOf('remember the word lantern')).toBeLessThan(body.indexOf('which word?'));
    await two.s.stop();
    expect(await two.s.exited).toBe(0);
    const session = /\(session (\S+),/.exec(two.s.output())![1]!;
    const log = readFileSync(join(two.workRoot, session, 'logs', 'hook-reader.log'), 'utf8');
    const rec = log
      .split('\n')
      .filter((l) => l.startsWith('{"rec"'))
      .map((l) => JSON.parse(l) as { rec: string; ops?: Array<{ ok?: { messages: Array<{ role: string; content: string }>; total: number } }> });
    const page = rec.find((r) => r.rec === 'on-session-end:ops')!.ops![0]!.ok!;
    // Newest first: task 2 (user, assistant), then task 1 from the first launch (user, assistant), each once.
    expect(page.total).toBe(4);
    expect(page.messages.map((m) => m.content)).toEqual(['you said lantern', 'which word?', 'noted: lantern', 'remember the word lantern']);
  }, 300_000);
});
