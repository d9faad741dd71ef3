/**
 * The conversation record with replicas on one PostgreSQL store: `murmur:conversation/read` is
 * the capsule's record, so a session's record also holds the tasks the other replicas ran (they
 * join it when its next task starts), each message once, and its own appends are not read back
 * twice. Two real sessions (real driver component, the scripted provider) on a real server.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSession, stage } from '../../runtime/compose/open.ts';
import { openStore } from '../../runtime/a2a/store/store.ts';
import type { CapsuleSession } from '../../runtime/loop/capsule-session.ts';
import type { ConversationMessage } from '../../runtime/inference/wire.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { startPostgres } from '../support/postgres.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from './kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const recordOf = (s: CapsuleSession) =>
  (s as unknown as { conversationRecord(): ConversationMessage[] })
    .conversationRecord()
    .map((m) => m.content.map((b) => ('text' in b ? String(b.text) : '')).join(''));

describe('conversation record shared by replicas', () => {
  it("a replica's record holds the other replicas' tasks too, in the order they finished, each message once", async () => {
    const pg = await startPostgres();
    cleanup.push(() => pg.stop());
    const url = await pg.url('murmur_shared_record');
    const provider = await startScriptedProvider([{ text: 'a1 done' }, { text: 'b1 done' }, { text: 'b2 done' }, { text: 'a2 done' }]);
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const dir = tmp('shared-record-');
    writeFileSync(join(dir, 'murmur.yaml'), capsuleYaml({ name: 'recorded', tools: [ECHO_TOOL.name] }));
    const hostEnv = { PATH: process.env.PATH, MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY };
    const open = async () => {
      const store = await openStore(url);
      const staged = await stage({ capsuleDir: dir, registryDir: registry, workRoot: tmp('shared-record-work-'), hostEnv });
      const session = await openSession(staged, { hostEnv, conversations: store.conversations });
      cleanup.push(
        () => store.close(),
        () => session.close('ok'),
      );
      return session;
    };
    const a = await open();
    const b = await open();
    const run = async (s: CapsuleSession, id: string) =>
      expect((await s.runTask({ taskId: id, contextId: `ctx-${id}`, text: `task ${id}`, source: 'a2a' })).exit).toBe('completed');
    await run(a, 'a1');
    await run(b, 'b1');
    await run(b, 'b2');
    await run(a, 'a2');
    // A's record: its own first task, B's two (joined when a2 started), then a2.
    expect(recordOf(a)).toEqual(['task a1', 'a1 done', 'task b1', 'b1 done', 'task b2', 'b2 done', 'task a2', 'a2 done']);
    // B had seen a1 when b1 started, and nothing new when b2 did.
    expect(recordOf(b)).toEqual(['task a1', 'a1 done', 'task b1', 'b1 done', 'task b2', 'b2 done']);
  }, 240_000);
});
