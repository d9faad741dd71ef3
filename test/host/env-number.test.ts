/**
 * The one rule for the runtime's numeric tuning variables (runtime/env-number.ts), as a table: its
 * three users (MURMUR_COMPONENT_IDLE_MS, MURMUR_TOKEN_WORKER_IDLE_MS, MURMUR_DRIVER_RETIRE_GROWTH_MIB)
 * test their own defaults and codes beside their code.
 */
import { describe, expect, it } from 'vitest';
import { envNonNegative } from '../../runtime/env-number.ts';
import { MurError } from '../../runtime/errors.ts';

const REFUSAL = { code: 'E-RUN-034', unit: 'milliseconds', hint: 'set it' };

describe('a numeric tuning variable', () => {
  it.each([
    [undefined, 7],
    ['', 7],
    ['0', 0],
    ['2.5', 2.5],
    ['1e3', 1000],
  ])('%j reads as %d', (v, want) => {
    expect(envNonNegative(v === undefined ? {} : { X: v }, 'X', 7, REFUSAL)).toBe(want);
  });

  it.each(['-1', 'NaN', 'Infinity', 'ten', '   ', '5ms'])('%j is refused with the variable, the unit and the value', (v) => {
    let e: unknown;
    try {
      envNonNegative({ X: v }, 'X', 7, REFUSAL);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(MurError);
    expect((e as MurError).code).toBe('E-RUN-034');
    expect((e as MurError).message).toBe(`X must be a number of milliseconds ≥ 0, not ${JSON.stringify(v)}`);
    expect((e as MurError).hint).toBe('set it');
  });
});

describe('a numeric tuning variable with a bound', () => {
  const BOUNDED = { ...REFUSAL, max: 100 };
  it('reads up to its bound and refuses past it, naming the range', () => {
    expect(envNonNegative({ X: '100' }, 'X', 7, BOUNDED)).toBe(100);
    expect(() => envNonNegative({ X: '100.5' }, 'X', 7, BOUNDED)).toThrow('X must be a number of milliseconds from 0 to 100, not "100.5"');
    expect(() => envNonNegative({ X: '-1' }, 'X', 7, BOUNDED)).toThrow('X must be a number of milliseconds from 0 to 100, not "-1"');
  });
});
