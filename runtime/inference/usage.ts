/**
 * Provider-reported token usage on a driver response (wit-interfaces.md "Reported token usage").
 * Four optional members, each a non-negative integer. An omitted member stays absent — it is never
 * turned into 0, because 0 is a genuine cache miss. A malformed report degrades, never fails:
 *
 * | Driver returns                          | Recorded                                   |
 * |-----------------------------------------|--------------------------------------------|
 * | no `usage`                              | nothing                                    |
 * | a `usage` that is not an object         | nothing                                    |
 * | a member not a non-negative integer     | nothing for it; well-formed siblings kept  |
 * | a member the runtime does not define    | nothing for it                             |
 */
export const USAGE_MEMBERS = ['input_tokens', 'output_tokens', 'cached_tokens', 'cache_write_tokens'] as const;
export type UsageMember = (typeof USAGE_MEMBERS)[number];

export type ReportedUsage = Partial<Record<UsageMember, number>>;

export interface UsageDrop {
  member: string;
  reason: 'not-an-object' | 'not-a-non-negative-integer' | 'unknown-member';
}

export interface UsageReport {
  /** Absent when nothing is recorded (no usage, not an object, or no well-formed member). */
  usage?: ReportedUsage;
  /** What was discarded and why, for a log line; never a failure. */
  dropped: UsageDrop[];
}

function isMember(k: string): k is UsageMember {
  return (USAGE_MEMBERS as readonly string[]).includes(k);
}

export function parseUsageReport(raw: unknown): UsageReport {
  if (raw === undefined) return { dropped: [] };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { dropped: [{ member: 'usage', reason: 'not-an-object' }] };
  }
  const usage: ReportedUsage = {};
  const dropped: UsageDrop[] = [];
  let any = false;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (!isMember(k)) {
      dropped.push({ member: k, reason: 'unknown-member' });
      continue;
    }
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      dropped.push({ member: k, reason: 'not-a-non-negative-integer' });
      continue;
    }
    usage[k] = v === 0 ? 0 : v; // normalises -0
    any = true;
  }
  return any ? { usage, dropped } : { dropped };
}

/** The recorded usage, or `undefined` for "nothing". */
export function parseUsage(raw: unknown): ReportedUsage | undefined {
  return parseUsageReport(raw).usage;
}
