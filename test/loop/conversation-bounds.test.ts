/**
 * The session's conversation memory is bounded by bytes (issue 13 §4): the conversation record
 * (`murmur:conversation/read`) keeps the newest messages within RECORD_MAX_BYTES (16 MiB), and the
 * threaded histories of all contexts keep at most HISTORIES_MAX_BYTES (32 MiB), the least recently
 * used context going first. A real session, real driver component, the scripted provider.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { HISTORIES_MAX_BYTES, RECORD_MAX_BYTES } from '../../runtime/loop/capsule-session.ts';
import { messageBytes } from '../../runtime/loop/conversation-bounds.ts';
import type { ConversationMessage } from '../../runtime/inference/wire.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, type Kit } from './kit.ts';

const kits: Kit[] = [];
afterAll(async () => {
  for (const k of kits) await k.close();
});

const MiB = 1024 * 1024;
/** `mib` MiB of ordinary text starting with `marker` (words, so token counting is the usual kind). */
function bulk(marker: string, mib: number): string {
  const word = 'lorem ipsum dolor sit amet ';
  return `${marker} ${word.repeat(Math.ceil((mib * MiB) / word.length))}`.slice(0, mib * MiB);
}

function textOf(m: ConversationMessage): string {
  return m.content.map((b) => ('text' in b ? String(b.text) : '')).join('');
}

describe('conversation memory bounded by bytes', () => {
  it('the conversation record keeps the newest messages within 16 MiB: six tasks of 3 MiB leave the messages of the last five (and the small answer of the first)', async () => {
    expect(RECORD_MAX_BYTES).toBe(16 * MiB);
    const kit = await openKit({
      script: { turns: [1, 2, 3, 4, 5, 6].map((i) => ({ text: `answer ${i}` })) },
      yaml: capsuleYaml({ name: 'recorder', tools: [ECHO_TOOL.name] }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
    });
    kits.push(kit);
    for (let i = 1; i <= 6; i++) {
      const r = await kit.session.runTask({ taskId: `t${i}`, contextId: `c${i}`, text: bulk(`marker-${i}`, 3), source: 'a2a' });
      expect(r.exit).toBe('completed');
    }
    // What murmur:conversation/read serves (the hook service reads this very list).
    const record = (kit.session as unknown as { conversationRecord(): ConversationMessage[] }).conversationRecord();
    const bytes = record.reduce((n, m) => n + messageBytes(m), 0);
    expect(bytes).toBeLessThanOrEqual(RECORD_MAX_BYTES);
    // The first task's 3 MiB message is the one that no longer fits; everything newer is kept, in order.
    expect(record.map((m) => (m.role === 'user' ? textOf(m).slice(0, 8) : textOf(m)))).toEqual([
      'answer 1',
      ...[2, 3, 4, 5, 6].flatMap((i) => [`marker-${i}`, `answer ${i}`]),
    ]);
  }, 240_000);

  it('threaded histories keep at most 32 MiB: a third 11 MiB context evicts the least recently used one, which then starts afresh', async () => {
    expect(HISTORIES_MAX_BYTES).toBe(32 * MiB);
    const kit = await openKit({
      script: { turns: ['A', 'B', 'C', 'C again', 'A again'].map((t) => ({ text: `noted ${t}` })) },
      yaml: capsuleYaml({ name: 'threader', tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  conversation: threaded\n' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
    });
    kits.push(kit);
    for (const ctx of ['A', 'B', 'C']) {
      const r = await kit.session.runTask({ taskId: `t${ctx}`, contextId: ctx, text: bulk(`context-${ctx}`, 11), source: 'a2a' });
      expect(r.exit).toBe('completed');
    }
    const bodyOf = (i: number) => JSON.stringify(kit.provider.requests[i]!.body);
    // C is held: its follow-up carries C's first message.
    expect((await kit.session.runTask({ taskId: 'tC2', contextId: 'C', text: 'and C?', source: 'a2a' })).exit).toBe('completed');
    expect(bodyOf(3)).toContain('context-C');
    // A was the least recently used when C pushed the total past 32 MiB: its follow-up has no history.
    expect((await kit.session.runTask({ taskId: 'tA2', contextId: 'A', text: 'and A?', source: 'a2a' })).exit).toBe('completed');
    expect(bodyOf(4)).not.toContain('context-A');
    expect(bodyOf(4)).toContain('and A?');
  }, 300_000);
});
