import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { promptCacheKey } from '../../runtime/inference/cache-key.ts';

describe('prompt_cache_key (wit-interfaces.md "Prompt cache routing hint")', () => {
  it('row 1: has a context id and fits in 64 characters → <name>:<version>:<context-id>', () => {
    expect(promptCacheKey('hello', '1.0.0', 'ctx-1')).toBe('hello:1.0.0:ctx-1');
  });

  it('row 2: has no context id and fits in 64 characters → <name>:<version>', () => {
    expect(promptCacheKey('hello', '1.0.0')).toBe('hello:1.0.0');
    expect(promptCacheKey('hello', '1.0.0', '')).toBe('hello:1.0.0');
  });

  it('row 3: a value past 64 characters → first 47 chars, ":", 16 hex of sha256(whole value)', () => {
    const name = 'customer-support-triage-agent';
    const ctx = '0b6f1c2e-8f5d-4a51-9b0e-6f2d3c4b5a69';
    const whole = `${name}:2.3.1:${ctx}`;
    expect(whole.length).toBeGreaterThan(64);
    const key = promptCacheKey(name, '2.3.1', ctx);
    const hex = createHash('sha256').update(whole).digest('hex').slice(0, 16);
    expect(key).toBe(`${whole.slice(0, 47)}:${hex}`);
    expect(key).toHaveLength(64);
    expect(key).toMatch(/^customer-support-triage-agent:.*:[0-9a-f]{16}$/);
  });

  it('exactly 64 characters is kept verbatim; 65 is shortened', () => {
    const v64 = promptCacheKey('n'.repeat(56), '1.0.0'); // 56 + 1 + 5 = 62
    expect(v64).toHaveLength(62);
    const name = 'n'.repeat(58); // 58 + 1 + 5 = 64
    expect(promptCacheKey(name, '1.0.0')).toBe(`${name}:1.0.0`);
    const longer = 'n'.repeat(59);
    expect(promptCacheKey(longer, '1.0.0')).toHaveLength(64);
    expect(promptCacheKey(longer, '1.0.0')).not.toContain('1.0.0');
  });

  it('is fixed per task and different across tasks (context ids differ), even when shortened', () => {
    const name = 'a-capsule-with-a-fairly-long-descriptive-name';
    const a1 = promptCacheKey(name, '1.0.0', 'ctx-aaaaaaaaaaaaaaaaaaaa');
    const a2 = promptCacheKey(name, '1.0.0', 'ctx-aaaaaaaaaaaaaaaaaaaa');
    const b = promptCacheKey(name, '1.0.0', 'ctx-bbbbbbbbbbbbbbbbbbbb');
    expect(a1).toBe(a2);
    expect(a1).not.toBe(b);
    expect(a1.slice(0, 47)).toBe(b.slice(0, 47));
  });

  it('never splits a surrogate pair when shortening', () => {
    const key = promptCacheKey('😀'.repeat(70), '1', 'ctx');
    expect(Array.from(key)).toHaveLength(64);
    expect(key).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});
