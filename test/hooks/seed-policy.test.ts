/**
 * The seed-context budget policy as a table (docs/hooks.md "Seed context", hooks.md "Context
 * seeding"): planSeed / fitSummary are pure, so every outcome and every boundary is one row, with
 * no component started. Token counts are given per message. test/hooks/seed.test.ts runs the same
 * outcomes through the bus with a real hook component.
 */
import { describe, expect, it } from 'vitest';
import { fitSummary, planSeed, type SeedPlan } from '../../runtime/hooks/seed.ts';
import type { HookMessage } from '../../runtime/hooks/types.ts';

const weight = new Map<HookMessage, number>();
const count = (m: HookMessage): number => weight.get(m) ?? 0;
let n = 0;
function msg(tokens: number, role = n % 2 ? 'assistant' : 'user'): HookMessage {
  const m: HookMessage = { role, content: `m${n}`, sourceId: `s${n++}` };
  weight.set(m, tokens);
  return m;
}
function toolCall(tokens: number, id: string): HookMessage {
  const m: HookMessage = { role: 'assistant', content: JSON.stringify([{ type: 'tool_call', id, name: 'read', input: {} }]), sourceId: `call-${id}` };
  weight.set(m, tokens);
  return m;
}
function toolResult(tokens: number, id: string): HookMessage {
  const m: HookMessage = { role: 'tool', content: JSON.stringify({ __murmur_tool_msg__: true, tool_call_id: id, body: 'ok' }), sourceId: `result-${id}` };
  weight.set(m, tokens);
  return m;
}
const ids = (p: SeedPlan): unknown =>
  p.outcome === 'refused'
    ? p.reason
    : p.outcome === 'summarize'
      ? { front: p.front.map((m) => m.sourceId), tail: p.tail.map((m) => m.sourceId) }
      : p.messages.map((m) => m.sourceId);

describe('planSeed: the outcome table', () => {
  const a = msg(40),
    b = msg(40),
    c = msg(28); // 108 tokens
  const ten = Array.from({ length: 10 }, () => msg(20)); // 200 tokens
  const call = toolCall(5, 'c1'),
    result = toolResult(100, 'c1');
  const rows: { name: string; seed: HookMessage[]; budget: number; window: number; margin?: number; outcome: SeedPlan['outcome']; expect: unknown }[] = [
    { name: 'tokens ≤ budget: committed whole', seed: [a, b], budget: 100, window: 1000, outcome: 'committed', expect: [a.sourceId, b.sourceId] },
    { name: 'tokens = budget: still committed', seed: [a, b, msg(20)], budget: 100, window: 1000, outcome: 'committed', expect: 3 },
    {
      name: 'within the margin: the oldest messages dropped',
      seed: [a, b, c],
      budget: 100,
      window: 1000,
      outcome: 'dropped_oldest',
      expect: [b.sourceId, c.sourceId],
    },
    { name: 'exactly ⌊budget × (1 + margin)⌋: dropped_oldest', seed: [msg(10), msg(100)], budget: 100, window: 1000, outcome: 'dropped_oldest', expect: 1 },
    {
      name: 'one token past the margin: summarize the front, the newest half-budget verbatim',
      seed: [msg(11), msg(100)],
      budget: 100,
      window: 1000,
      outcome: 'summarize',
      expect: 'summarize',
    },
    {
      name: 'beyond the margin: front summarized, tail fits half the budget',
      seed: ten,
      budget: 100,
      window: 1000,
      outcome: 'summarize',
      expect: { front: ten.slice(0, 8).map((m) => m.sourceId), tail: ten.slice(8).map((m) => m.sourceId) },
    },
    { name: 'window unknown (0): beyond the margin still summarizes', seed: ten, budget: 100, window: 0, outcome: 'summarize', expect: 'summarize' },
    {
      name: 'a larger margin keeps it a drop',
      seed: ten,
      budget: 100,
      window: 1000,
      margin: 1,
      outcome: 'dropped_oldest',
      expect: ten.slice(5).map((m) => m.sourceId),
    },
    { name: 'no budget: refused no_budget', seed: [msg(5)], budget: 0, window: 0, outcome: 'refused', expect: 'no_budget' },
    {
      name: 'more than the whole context window: refused overflow_over_limit',
      seed: [msg(400), msg(400), msg(400)],
      budget: 100,
      window: 1000,
      outcome: 'refused',
      expect: 'overflow_over_limit',
    },
    {
      name: 'dropping would start on a dangling tool result: refused overflow_nothing_fits',
      seed: [call, result],
      budget: 100,
      window: 1000,
      outcome: 'refused',
      expect: 'overflow_nothing_fits',
    },
    {
      name: 'broken tool pairs: refused invalid_messages',
      seed: [msg(5), toolResult(5, 'nobody')],
      budget: 100,
      window: 1000,
      outcome: 'refused',
      expect: /^invalid_messages: tool result at message 1 answers no open tool call/,
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const p = planSeed(r.seed, r.budget, r.window, r.margin ?? 0.1, count);
      expect(p.outcome).toBe(r.outcome);
      if (typeof r.expect === 'number') expect((p as { messages: HookMessage[] }).messages).toHaveLength(r.expect);
      else if (r.expect instanceof RegExp) expect(ids(p)).toMatch(r.expect);
      else if (r.expect !== 'summarize') expect(ids(p)).toEqual(r.expect);
    });
  }

  it('never mutates the proposed list', () => {
    const seed = [a, b, c];
    planSeed(seed, 100, 1000, 0.1, count);
    expect(seed).toEqual([a, b, c]);
  });
});

describe('fitSummary: after the compaction hook summarized the front', () => {
  const summary = msg(30, 'user');
  const t1 = msg(30),
    t2 = msg(30);

  it('the summary leads, then the tail', () => {
    const r = fitSummary([summary], [t1, t2], 100, count);
    expect(r).toEqual({ outcome: 'summarized', messages: [summary, t1, t2] });
  });

  it('a tail that no longer fits loses its oldest messages first', () => {
    const r = fitSummary([summary], [t1, t2], 60, count);
    expect(r).toEqual({ outcome: 'summarized', messages: [summary, t2] });
  });

  it('a summary alone over the budget: refused summary_over_budget', () => {
    expect(fitSummary([msg(120)], [t1], 100, count)).toEqual({ outcome: 'refused', reason: 'summary_over_budget' });
  });

  it('a summary breaking the tool pairs: refused summarize_failed', () => {
    const r = fitSummary([toolResult(5, 'gone')], [t1], 100, count);
    expect(r.outcome).toBe('refused');
    expect((r as { reason: string }).reason).toMatch(/^summarize_failed: tool result at message 0/);
  });
});
