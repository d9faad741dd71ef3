/**
 * The character classes cl100k's pre-tokenizer pattern tests, per code point, from a table.
 *
 * The pattern (see pretokenize.ts) only ever asks whether a code point is `\p{L}`, `\p{N}`, `\s`
 * or one of `\r` `\n`, so each code point gets one of five classes. ASCII is a fixed table; every
 * other code point is looked up in a block of 256 filled on first use by V8's own `\p{L}`, `\p{N}`
 * and `\s` (so the table is exactly the regex engine's Unicode data, whatever version the runtime's
 * Node ships, and costs nothing for scripts a text never uses). Lone surrogates are class Other, as
 * a `u`-flag regex treats them. Shared by the pre-tokenizer and the chunker (chunk.ts), so both
 * classify identically.
 */
export const OTHER = 0; // none of the below: [^\s\p{L}\p{N}]
export const LETTER = 1; // \p{L}
export const NUMBER = 2; // \p{N}
export const SPACE = 3; // \s other than \r and \n
export const NEWLINE = 4; // \r or \n

const ASCII = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  ASCII[c] =
    (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
      ? LETTER
      : c >= 48 && c <= 57
        ? NUMBER
        : c === 10 || c === 13
          ? NEWLINE
          : c === 32 || (c >= 9 && c <= 12)
            ? SPACE
            : OTHER;
}

const IS_LETTER = /^\p{L}$/u;
const IS_NUMBER = /^\p{N}$/u;
const IS_SPACE = /^\s$/u;
const blocks: (Uint8Array | undefined)[] = new Array(0x1100).fill(undefined);

function fill(block: number): Uint8Array {
  const b = new Uint8Array(256);
  for (let k = 0; k < 256; k++) {
    const cp = (block << 8) | k;
    if (cp < 128) {
      b[k] = ASCII[cp]!;
      continue;
    }
    const s = String.fromCodePoint(cp);
    b[k] = IS_LETTER.test(s) ? LETTER : IS_NUMBER.test(s) ? NUMBER : IS_SPACE.test(s) ? SPACE : OTHER;
  }
  blocks[block] = b;
  return b;
}

/** The class of code point `cp` (0 ≤ cp ≤ 0x10FFFF). */
export function charClass(cp: number): number {
  if (cp < 128) return ASCII[cp]!;
  const b = blocks[cp >> 8] ?? fill(cp >> 8);
  return b[cp & 255]!;
}

/** The code point at code-unit index `i` of `t` (i < t.length), a lone surrogate as itself. */
export function codePointAt(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if ((c & 0xfc00) === 0xd800 && i + 1 < t.length) {
    const d = t.charCodeAt(i + 1);
    if ((d & 0xfc00) === 0xdc00) return ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
  }
  return c;
}
