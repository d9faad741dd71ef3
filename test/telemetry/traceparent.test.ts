/**
 * One traceparent parser: the A2A intake (runtime/a2a/wire.ts validTraceparent) and the spans
 * (parseTraceparent) accept and refuse the same headers, by the W3C rules (a higher version may
 * append fields; version 00 may not; ff and all-zero ids are invalid).
 */
import { describe, expect, it } from 'vitest';
import { validTraceparent } from '../../runtime/a2a/wire.ts';
import { parseTraceparent } from '../../runtime/telemetry/traceparent.ts';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';
const rows: [header: string, ok: boolean][] = [
  [`00-${T}-${S}-01`, true],
  [`00-${T}-${S}-00`, true],
  [` 00-${T.toUpperCase()}-${S}-01 `, true],
  [`01-${T}-${S}-01`, true],
  [`01-${T}-${S}-01-future-fields`, true],
  [`cc-${T}-${S}-09-x`, true],
  [`00-${T}-${S}-01-extra`, false],
  [`ff-${T}-${S}-01`, false],
  [`00-${'0'.repeat(32)}-${S}-01`, false],
  [`00-${T}-${'0'.repeat(16)}-01`, false],
  [`00-${T.slice(1)}-${S}-01`, false],
  [`01-${T}-${S}-01x`, false],
  ['garbage', false],
  ['', false],
];

describe('traceparent: the A2A intake and the spans agree', () => {
  for (const [h, ok] of rows) {
    it(`${JSON.stringify(h)} is ${ok ? 'accepted' : 'refused'}`, () => {
      expect(parseTraceparent(h) !== undefined).toBe(ok);
      expect(validTraceparent(h)).toBe(ok ? h.trim().toLowerCase() : undefined);
      if (ok) expect(parseTraceparent(validTraceparent(h))).toMatchObject({ traceId: T, spanId: S, isRemote: true });
    });
  }

  it('a repeated header: the first value decides', () => {
    expect(validTraceparent([`01-${T}-${S}-01-x`, 'garbage'])).toBe(`01-${T}-${S}-01-x`);
    expect(validTraceparent(['garbage', `00-${T}-${S}-01`])).toBeUndefined();
  });

  it('only the sampled flag is kept', () => {
    expect(parseTraceparent(`cc-${T}-${S}-09-x`)?.traceFlags).toBe(1);
  });
});
