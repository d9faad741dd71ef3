import { describe, expect, it } from 'vitest';
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';
import { buildCl100kCounter } from '../../runtime/inference/bpe-tables.ts';
import { CL100K_PATTERN, cl100kPieces } from '../../runtime/inference/pretokenize.ts';
import { countTokensUnchunked } from '../../runtime/inference/tokens-unchunked.ts';

/** Fragments the pattern treats differently, each alternative and each edge of it. */
const FRAGMENTS = [
  // ASCII letters, digits, punctuation
  'a',
  'Zq',
  'hello',
  'X',
  '7',
  '42',
  '123',
  '98765',
  '.',
  ',',
  '!?',
  '(',
  ')',
  '{"',
  '":',
  '-',
  '_',
  '==',
  '/',
  '+',
  '@',
  '#',
  '`',
  // contractions in every case, and near misses
  "'s",
  "'S",
  "'t",
  "'T",
  "'re",
  "'rE",
  "'Re",
  "'RE",
  "'ve",
  "'vE",
  "'Ve",
  "'VE",
  "'m",
  "'M",
  "'ll",
  "'lL",
  "'Ll",
  "'LL",
  "'d",
  "'D",
  "'",
  "''",
  "'r",
  "'v",
  "'l",
  "'x",
  "'1",
  "'é",
  "'ſ",
  '\u2019s',
  // whitespace: runs, tabs, other \s, newlines, CRLF
  ' ',
  '  ',
  '     ',
  '\t',
  '\t\t',
  '\n',
  '\n\n',
  '\r\n',
  '\r',
  ' \n',
  '\n ',
  ' \r\n ',
  '\u00a0',
  '\u3000',
  '\u2028',
  '\u2029',
  '\u000b',
  '\u000c',
  '\ufeff',
  '\u200b',
  // long whitespace runs before letters, numbers and symbols
  '        word',
  '\t\t\tx',
  '   \n   y',
  '      7',
  '     .',
  '  \u00a0 z',
  // non-ASCII letters and numbers (Nd, Nl, No, astral)
  'é',
  'ß',
  'Ж',
  'ля',
  'ا',
  '日本',
  'の',
  '한',
  'ǅ',
  'ʰ',
  '٣',
  '۴',
  '½',
  'Ⅻ',
  '²',
  '𝟘',
  '𐒠',
  '𝐀',
  '\u{20000}',
  // marks (combining and spacing), symbols, emoji with modifiers and joiners
  'e\u0301',
  '\u0301',
  '\u0903',
  'क्ष',
  '€',
  '©',
  '→',
  '😀',
  '👍🏽',
  '👩‍💻',
  '🇫🇷',
  '\u{1F3FB}',
  // lone surrogates
  '\ud800',
  '\udc00',
  '\udbff',
  '\udfff',
  'a\ud83d',
  '\ude00b',
];

function seededText(seed: number, parts: number): string {
  let s = seed >>> 0;
  const rnd = (n: number): number => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8) % n;
  let out = '';
  for (let i = 0; i < parts; i++) {
    const r = rnd(10);
    if (r < 7) out += FRAGMENTS[rnd(FRAGMENTS.length)]!;
    else if (r < 8) out += ' '.repeat(1 + rnd(12)) + (rnd(2) ? '\n' : '');
    else {
      // a random code point of any plane (surrogate halves included)
      const plane = rnd(4);
      const cp = plane === 0 ? rnd(0x10000) : plane === 1 ? 0x10000 + rnd(0x20000) : plane === 2 ? 0xe0000 + rnd(0x200) : 0x80 + rnd(0x780);
      out += cp >= 0xd800 && cp < 0xe000 ? String.fromCharCode(cp) : String.fromCodePoint(cp);
    }
  }
  return out;
}

const regexPieces = (t: string): string[] => [...t.matchAll(new RegExp(CL100K_PATTERN, 'gu'))].map((m) => m[0]);

describe('cl100k pre-tokenizer (scanner over char codes)', () => {
  it('implements the pattern js-tiktoken ships', () => {
    expect(CL100K_PATTERN).toBe(cl100k_base.pat_str);
  });

  it('cuts every piece where the regex cuts it, on seeded text mixing every class and edge', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const t = seededText(seed, 1 + (seed % 60));
      const got = cl100kPieces(t);
      const want = regexPieces(t);
      if (got.length !== want.length || got.some((p, i) => p !== want[i])) {
        expect({ seed, text: t, pieces: got }).toEqual({ seed, text: t, pieces: want });
      }
    }
  });

  it('cuts every fragment pair where the regex cuts it (each alternative next to each other)', () => {
    for (const a of FRAGMENTS) {
      for (const b of FRAGMENTS) {
        const t = a + b;
        expect(cl100kPieces(t), JSON.stringify(t)).toEqual(regexPieces(t));
      }
    }
  });

  it('counts those texts exactly as js-tiktoken encodes them', () => {
    const counter = buildCl100kCounter();
    const texts = Array.from({ length: 400 }, (_, k) => seededText(10_000 + k, 20 + (k % 120)));
    texts.push(FRAGMENTS.join(''), FRAGMENTS.join(' '), [...FRAGMENTS].reverse().join('\n'));
    const got = texts.map((t) => counter.count(t));
    expect(got).toEqual(texts.map((t) => countTokensUnchunked(t)));
  });

  it('counts long single pieces (the heap merge) exactly as js-tiktoken', () => {
    const counter = buildCl100kCounter();
    const texts = [
      'abcdefghijklmnopqrstuvwxyz'.repeat(12),
      '日本語のテキスト'.repeat(30),
      '=-'.repeat(150),
      ' '.repeat(500),
      seededText(99, 40)
        .replace(/[^\p{L}]/gu, '')
        .repeat(5),
    ];
    expect(texts.map((t) => counter.count(t))).toEqual(texts.map((t) => countTokensUnchunked(t)));
  });
});
