/**
 * The counting rule that keeps `status.usage` monotonic although the pods' counters are not.
 *
 * A pod's `capsule_tokens_total` starts at 0 whenever its runtime process starts (container
 * restart, new pod). The scraper keeps, in memory, the last value it saw of each pod (by pod UID)
 * and adds only what is new:
 *
 * - **same process, counter grew** → add the difference;
 * - **restart** — `process_start_time_seconds` changed, or a counter went down → the process
 *   counted from 0 again: add its whole new value (tokens used between the last scrape and the
 *   restart by the old process are lost: at most one interval's worth);
 * - **first sight of a pod** → add its whole value (it has not been counted), **except** when
 *   status.usage was written by an earlier operator process (leader failover, operator restart)
 *   and this pod's process started before that write: then the earlier process has counted it, and
 *   the current value only becomes the baseline (tokens it used since that write are lost: at most
 *   one interval's worth). "Before" means at least a second before (process_start_time_seconds is
 *   rounded to the second, and a process needs longer than that to become ready).
 *
 * So the total never goes backwards and is never double-counted; it can under-count by at most
 * one interval per restart or failover.
 */
import type { PodTokens } from './prom.ts';

export interface PodState {
  input: number;
  output: number;
  startTime?: number;
}

export type DeltaReason = 'first' | 'baseline' | 'growth' | 'restart';

export interface Delta {
  input: number;
  output: number;
  reason: DeltaReason;
}

export interface DeltaContext {
  /** status.usage.observedAt of the capsule as the scraper read it (ms since the epoch), if any. */
  observedAtMs?: number;
  /** When this scraper (this operator process / leadership term) started (ms). */
  sinceMs: number;
}

export function podDelta(prev: PodState | undefined, cur: PodTokens, ctx: DeltaContext): Delta {
  if (!prev) {
    // prom-client rounds the start time to the second; a process that started within about a
    // second of the write cannot have been ready and scraped for it: count it.
    const countedBefore =
      ctx.observedAtMs !== undefined && ctx.observedAtMs < ctx.sinceMs && cur.startTime !== undefined && (cur.startTime + 1) * 1000 <= ctx.observedAtMs;
    return countedBefore ? { input: 0, output: 0, reason: 'baseline' } : { input: cur.input, output: cur.output, reason: 'first' };
  }
  const restarted =
    (prev.startTime !== undefined && cur.startTime !== undefined && cur.startTime !== prev.startTime) || cur.input < prev.input || cur.output < prev.output;
  if (restarted) return { input: cur.input, output: cur.output, reason: 'restart' };
  return { input: cur.input - prev.input, output: cur.output - prev.output, reason: 'growth' };
}

export const stateOf = (cur: PodTokens): PodState => ({
  input: cur.input,
  output: cur.output,
  ...(cur.startTime !== undefined ? { startTime: cur.startTime } : {}),
});
