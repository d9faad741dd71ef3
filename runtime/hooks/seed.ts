/**
 * The seed-context budget policy (hooks.md "Context seeding"; docs/hooks.md "Seed context"): what
 * becomes of the seed a hook proposes at `on-task-start`, as pure functions of the seed, the budget
 * (`budget-tokens`), the context window, `context.seed_overflow_margin` and a token count per
 * message. The bus runs the compaction hook when the plan says `summarize`, then `fitSummary`.
 *
 * | outcome          | when                                                                 |
 * |------------------|----------------------------------------------------------------------|
 * | `committed`      | tokens ≤ budget                                                      |
 * | `dropped_oldest` | budget < tokens ≤ ⌊budget × (1 + margin)⌋: the newest messages fitting |
 * | `summarize`      | beyond the margin, not over the window: the front goes to the hook   |
 * | `refused`        | no budget, broken tool pairs, nothing fits, over the whole window    |
 */
import { validateToolPairs } from './messages.ts';
import type { HookMessage } from './types.ts';

export type TokenCount = (m: HookMessage) => number;

export type SeedPlan =
  | { outcome: 'committed' | 'dropped_oldest'; messages: HookMessage[] }
  /** Summarize `front` through the compaction hook; `tail` (the newest messages fitting half the budget) stays verbatim. */
  | { outcome: 'summarize'; front: HookMessage[]; tail: HookMessage[] }
  | { outcome: 'refused'; reason: string };

export type SeedResult = { outcome: 'summarized'; messages: HookMessage[] } | { outcome: 'refused'; reason: string };

function total(list: readonly HookMessage[], count: TokenCount): number {
  let n = 0;
  for (const m of list) n += count(m);
  return n;
}

/** What the policy does with `proposed` (oldest first) under `budget` tokens. `window` 0 = unknown. */
export function planSeed(proposed: readonly HookMessage[], budget: number, window: number, margin: number, count: TokenCount): SeedPlan {
  if (budget <= 0) return { outcome: 'refused', reason: 'no_budget' };
  const valid = validateToolPairs(proposed);
  if (!valid.ok) return { outcome: 'refused', reason: `invalid_messages: ${valid.reason}` };
  const tokens = total(proposed, count);
  if (tokens <= budget) return { outcome: 'committed', messages: [...proposed] };
  if (tokens <= Math.floor(budget * (1 + margin))) {
    let kept = dropOldest(proposed, budget, count);
    // Never start on a dangling tool result: drop further until the pairs match again.
    while (kept.length > 0 && !validateToolPairs(kept).ok) kept = kept.slice(1);
    if (kept.length === 0) return { outcome: 'refused', reason: 'overflow_nothing_fits' };
    return { outcome: 'dropped_oldest', messages: kept };
  }
  if (window > 0 && tokens > window) return { outcome: 'refused', reason: 'overflow_over_limit' };
  // Beyond the margin: the newest messages that fit half the budget stay verbatim; the front is
  // summarized by the compaction hook, and the summary leads.
  let tailStart = proposed.length;
  let tailTokens = 0;
  while (tailStart > 0) {
    const t = count(proposed[tailStart - 1]!);
    if (tailTokens + t > Math.floor(budget / 2)) break;
    tailTokens += t;
    tailStart--;
  }
  return { outcome: 'summarize', front: proposed.slice(0, tailStart), tail: proposed.slice(tailStart) };
}

/**
 * The seed after the compaction hook summarized the front: the summary, then as much of the tail
 * (newest kept) as fits the budget; refused when the pairs break or the summary alone is over.
 */
export function fitSummary(summary: readonly HookMessage[], tail: readonly HookMessage[], budget: number, count: TokenCount): SeedResult {
  const result = [...summary, ...tail];
  const check = validateToolPairs(result);
  if (!check.ok) return { outcome: 'refused', reason: `summarize_failed: ${check.reason}` };
  while (total(result, count) > budget && result.length > summary.length) result.splice(summary.length, 1);
  if (total(result, count) > budget) return { outcome: 'refused', reason: 'summary_over_budget' };
  return { outcome: 'summarized', messages: result };
}

/** The newest messages of `list` whose tokens fit `budget` (drops from the front, oldest first). */
function dropOldest(list: readonly HookMessage[], budget: number, count: TokenCount): HookMessage[] {
  const counts = list.map(count);
  let sum = counts.reduce((a, b) => a + b, 0);
  let start = 0;
  while (start < list.length && sum > budget) sum -= counts[start++]!;
  return list.slice(start);
}
