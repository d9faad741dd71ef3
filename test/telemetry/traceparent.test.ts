/**
 * One traceparent parser: the A2A intake (runtime/a2a/core/wire.ts validTraceparent) and the spans
 * (parseTraceparent) accept and refuse the same headers, by the W3C rules (a higher version may
 * append fields; version 00 may not; ff and all-zero ids are invalid).
 */
import { describe, expect, it } from 'vitest';
import { parseTraceParent as libraryParse } from '@opentelemetry/core';
import { validTraceparent } from '../../runtime/a2a/core/wire.ts';
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

  it("accepts and refuses exactly what @opentelemetry/core's parseTraceParent does, with the same fields", () => {
    const headers = [
      ...rows.map(([h]) => h.trim().toLowerCase()),
      `00-${T}-${S}-01-`,
      `02-${T}-${S}-ff`,
      `00-${T}-${S}-1`,
      `0-${T}-${S}-01`,
      `00-${T}-${S}-01 `,
      `00-${T}-${S}-01\t`,
      `aa-${T}-${S}-01-x-y`,
    ];
    for (const h of headers) {
      const lib = libraryParse(h);
      const ours = parseTraceparent(h);
      const libValid = lib !== null && !/^0+$/.test(lib.traceId) && !/^0+$/.test(lib.spanId);
      expect({ h, ok: ours !== undefined }).toEqual({ h, ok: libValid });
      if (ours && lib)
        expect({ traceId: ours.traceId, spanId: ours.spanId, sampled: ours.traceFlags }).toEqual({
          traceId: lib.traceId,
          spanId: lib.spanId,
          sampled: lib.traceFlags & 1,
        });
    }
  });

  it('a repeated header: the first value decides', () => {
    expect(validTraceparent([`01-${T}-${S}-01-x`, 'garbage'])).toBe(`01-${T}-${S}-01-x`);
    expect(validTraceparent(['garbage', `00-${T}-${S}-01`])).toBeUndefined();
  });

  it('only the sampled flag is kept', () => {
    expect(parseTraceparent(`cc-${T}-${S}-09-x`)?.traceFlags).toBe(1);
  });
});
