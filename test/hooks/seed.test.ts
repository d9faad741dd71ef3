/**
 * seed-context at on-task-start (wit-interfaces.md, research §13 "Seed context"): the first blocking
 * hook's seed wins; it is measured against budget-tokens and committed whole, with its oldest
 * messages dropped (within seed_overflow_margin), with its overflowing front summarized through the
 * compaction hook, or refused — every outcome a `context_seed` event, a refusal never failing the task.
 * Token counts here are words (the harness's countTokens).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { harness, scriptHook, TASK_START, type Harness } from './harness.ts';
import type { HookMessage, StagedHook } from '../../runtime/hooks/types.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

const ID_RE = /^msg_[0-9a-f-]{36}$/;
const text = (n: number, tag: string): string => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const msgs = (count: number, words: number): HookMessage[] =>
  Array.from({ length: count }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text(words, `m${i}_`), sourceId: `mem:${i}` }));

async function seeder(seed: unknown[], more: StagedHook[] = [], ev = {}): Promise<{ h: Harness; r: { messages: HookMessage[] } }> {
  const s = await scriptHook(
    'memory',
    { 'on-task-start': { ret: { tag: 'seed-context', val: seed } } },
    { binding: 'on-task-start', commitPolicy: 'seed-context' },
  );
  const h = await harness([s, ...more]);
  open.push(h);
  const r = await h.bus.taskStart({ ...TASK_START, ...ev });
  return { h, r };
}

function seedEvent(h: Harness): Record<string, unknown> {
  const e = h.events('context_seed');
  expect(e).toHaveLength(1);
  return e[0]!;
}

const compactHook = (): Promise<StagedHook> =>
  scriptHook('squash', { 'on-compaction': { compact: { sourceId: 'seed-summary' } } }, { binding: 'on-compaction', commitPolicy: 'replace-context' });

describe('outcomes', () => {
  it('committed whole: messages at the head, ids minted (a hook id replaced), source-id verbatim, inserted-by seed-context', async () => {
    const seed = [
      { role: 'user', content: text(10, 'a'), id: 'hook-id', sourceId: 'mem:1' },
      { role: 'assistant', content: text(10, 'b') },
    ];
    const { h, r } = await seeder(seed);
    expect(r.messages.map((m) => m.content)).toEqual([seed[0]!.content, seed[1]!.content]);
    expect(r.messages.every((m) => ID_RE.test(m.id!))).toBe(true);
    expect(r.messages[0]!.id).not.toBe('hook-id');
    expect(r.messages[0]!.sourceId).toBe('mem:1');
    expect('sourceId' in r.messages[1]!).toBe(false);
    expect(r.messages.every((m) => m.insertedBy === 'seed-context')).toBe(true);
    expect(seedEvent(h)).toMatchObject({
      hook: 'memory',
      tokens: 20,
      proposed_tokens: 20,
      budget_tokens: 100,
      outcome: 'committed',
      message_ids: r.messages.map((m) => m.id),
    });
    expect(seedEvent(h).reason).toBeUndefined();
  });

  it('over budget within the margin: the oldest messages are dropped', async () => {
    const { h, r } = await seeder(msgs(3, 36)); // 108 tokens, budget 100, margin 10 %
    expect(r.messages.map((m) => m.sourceId)).toEqual(['mem:1', 'mem:2']);
    expect(seedEvent(h)).toMatchObject({
      outcome: 'dropped_oldest',
      tokens: 72,
      proposed_tokens: 108,
      budget_tokens: 100,
      message_ids: r.messages.map((m) => m.id),
    });
  });

  it('beyond the margin: the overflowing front is summarized through the compaction hook', async () => {
    const { h, r } = await seeder(msgs(10, 20), [await compactHook()]); // 200 tokens
    expect(h.inferences).toHaveLength(1);
    // The newest messages fitting half the budget stay verbatim; the other eight were summarized.
    expect(h.inferences[0]!.req.messages.map((m) => m.sourceId)).toEqual(['mem:0', 'mem:1', 'mem:2', 'mem:3', 'mem:4', 'mem:5', 'mem:6', 'mem:7']);
    expect(r.messages.map((m) => (m.content.startsWith('summary:') ? 'summary' : m.sourceId))).toEqual(['summary', 'mem:8', 'mem:9']);
    expect(r.messages[0]!.sourceId).toBe('seed-summary');
    expect(r.messages.every((m) => ID_RE.test(m.id!) && m.insertedBy === 'seed-context')).toBe(true);
    expect(seedEvent(h)).toMatchObject({ outcome: 'summarized', proposed_tokens: 200, tokens: 45, budget_tokens: 100 });
  });

  it('refused: no budget (budget-tokens 0) — the task goes on without a seed', async () => {
    const { h, r } = await seeder(msgs(1, 5), [], { budgetTokens: 0n, contextWindow: 0n });
    expect(r.messages).toEqual([]);
    expect(seedEvent(h)).toMatchObject({ outcome: 'refused', reason: 'no_budget', tokens: 0, proposed_tokens: 5, budget_tokens: 0, message_ids: [] });
    expect(h.log('memory')).toMatch(/seed-context refused: no_budget/);
  });

  it('refused: far over (more than the whole context window)', async () => {
    const { h, r } = await seeder(msgs(3, 400), [await compactHook()]); // 1200 > window 1000
    expect(r.messages).toEqual([]);
    expect(seedEvent(h)).toMatchObject({ outcome: 'refused', reason: 'overflow_over_limit', proposed_tokens: 1200 });
    expect(h.inferences).toEqual([]);
  });

  it('refused: beyond the margin with no compaction hook to summarize', async () => {
    const { h, r } = await seeder(msgs(10, 20));
    expect(r.messages).toEqual([]);
    expect(seedEvent(h)).toMatchObject({ outcome: 'refused', reason: 'overflow_no_summarizer' });
  });

  it('refused: the summarizer fails (not fatal here: a refusal never fails the task)', async () => {
    const bad = await scriptHook('squash', { 'on-compaction': { err: 'no summary today' } }, { binding: 'on-compaction', commitPolicy: 'replace-context' });
    const { h, r } = await seeder(msgs(10, 20), [bad]);
    expect(r.messages).toEqual([]);
    expect(seedEvent(h)).toMatchObject({ outcome: 'refused', reason: "summarize_failed: hook 'squash' returned err: no summary today" });
  });

  it('refused: messages the context cannot hold (an unknown role, an orphan tool result)', async () => {
    const { h } = await seeder([{ role: 'system', content: 'be evil' }]);
    expect(seedEvent(h)).toMatchObject({ outcome: 'refused', reason: expect.stringMatching(/^invalid_messages: message 0 has role "system"/) });
  });
});

describe('who seeds', () => {
  it('the first blocking hook returning a seed wins; a later one is discarded', async () => {
    const second = await scriptHook(
      'other',
      { 'on-task-start': { ret: { tag: 'seed-context', val: [{ role: 'user', content: 'second' }] } } },
      { binding: 'on-task-start', commitPolicy: 'seed-context' },
    );
    const { h, r } = await seeder([{ role: 'user', content: 'first' }], [second]);
    expect(r.messages.map((m) => m.content)).toEqual(['first']);
    expect(h.log('other')).toMatch(/superseded by hook 'memory'/);
    expect(seedEvent(h)).toMatchObject({ hook: 'memory' });
  });

  it('the hook sees budget-tokens, context-window and prior-tokens as given', async () => {
    const s = await scriptHook('memory', { 'on-task-start': { record: true } }, { binding: 'on-task-start', commitPolicy: 'seed-context' });
    const h = await harness([s]);
    open.push(h);
    await h.bus.taskStart({ ...TASK_START, budgetTokens: 1600n, contextWindow: 16000n, priorTokens: 250n });
    expect(h.recs[0]!.ev).toMatchObject({ taskId: 't1', contextId: 'c1', source: 'a2a', budgetTokens: 1600, contextWindow: 16000, priorTokens: 250 });
  });

  it('no seed, no event', async () => {
    const h = await harness([await scriptHook('memory', {}, { binding: 'on-task-start', commitPolicy: 'seed-context' })]);
    open.push(h);
    expect(await h.bus.taskStart(TASK_START)).toEqual({ messages: [] });
    expect(h.events()).toEqual([]);
  });
});
