import { describe, expect, it } from 'vitest';
import { parseUsage, parseUsageReport } from '../../runtime/inference/usage.ts';

describe('reported usage (wit-interfaces.md "Reported token usage")', () => {
  it('records the four members as given', () => {
    expect(parseUsage({ input_tokens: 12043, output_tokens: 218, cached_tokens: 11780, cache_write_tokens: 0 })).toEqual({
      input_tokens: 12043,
      output_tokens: 218,
      cached_tokens: 11780,
      cache_write_tokens: 0,
    });
  });

  it('an omitted member stays absent — never written as 0', () => {
    const u = parseUsage({ input_tokens: 10, output_tokens: 2 })!;
    expect(u).toEqual({ input_tokens: 10, output_tokens: 2 });
    expect('cached_tokens' in u).toBe(false);
    expect('cache_write_tokens' in u).toBe(false);
    // a genuine 0 is kept as 0
    expect(parseUsage({ cached_tokens: 0 })).toEqual({ cached_tokens: 0 });
  });

  it('degrade row: no usage → nothing', () => {
    expect(parseUsage(undefined)).toBeUndefined();
    expect(parseUsageReport(undefined).dropped).toEqual([]);
  });

  it('degrade row: a usage that is not an object → nothing', () => {
    for (const v of [null, 42, 'lots', true, [1, 2]]) {
      expect(parseUsage(v)).toBeUndefined();
      expect(parseUsageReport(v).dropped).toEqual([{ member: 'usage', reason: 'not-an-object' }]);
    }
  });

  it('degrade row: a member that is not a non-negative integer → nothing for it, siblings kept', () => {
    const r = parseUsageReport({ input_tokens: -1, output_tokens: 1.5, cached_tokens: '7', cache_write_tokens: 3 });
    expect(r.usage).toEqual({ cache_write_tokens: 3 });
    expect(r.dropped.map((d) => d.member).sort()).toEqual(['cached_tokens', 'input_tokens', 'output_tokens']);
    expect(parseUsage({ input_tokens: null, output_tokens: 5 })).toEqual({ output_tokens: 5 });
    expect(parseUsage({ input_tokens: Number.NaN, output_tokens: Infinity })).toBeUndefined();
    expect(parseUsage({ input_tokens: 2 ** 60 })).toBeUndefined();
  });

  it('degrade row: a member the runtime does not define → nothing for it', () => {
    const r = parseUsageReport({ input_tokens: 4, prompt_tokens: 9, total_tokens: 13 });
    expect(r.usage).toEqual({ input_tokens: 4 });
    expect(r.dropped).toEqual([
      { member: 'prompt_tokens', reason: 'unknown-member' },
      { member: 'total_tokens', reason: 'unknown-member' },
    ]);
  });
});
