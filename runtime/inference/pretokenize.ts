/**
 * cl100k_base's pre-tokenizer as a scanner over char codes: where each piece ends.
 *
 * Why not the library's regex: run with `exec` it was the counter's ceiling (5–14 MiB/s on
 * high-entropy text under load, before any merge), and every match allocates a string. This scanner
 * implements exactly the pattern js-tiktoken ships (`cl100k_base.pat_str`, a `u`-flag regex):
 *
 *     's|'S|'t|'T|'re|'rE|'Re|'RE|'ve|…|'ll|…|'d|'D        (1) contractions, ASCII case only
 *   | [^\r\n\p{L}\p{N}]?\p{L}+                              (2) letters, with one optional prefix
 *   | \p{N}{1,3}                                            (3) up to three numbers
 *   |  ?[^\s\p{L}\p{N}]+[\r\n]*                             (4) other symbols, optional leading space
 *   | \s*[\r\n]+                                            (5) whitespace up to its last newline
 *   | \s+(?!\S)                                             (6) whitespace but the last before \S
 *   | \s+                                                   (7) the rest of a whitespace run
 *
 * taken as the regex engine takes it: the first alternative that matches at the position, each
 * quantifier greedy, backtracking resolved in closed form ((5) ends after the run's last newline;
 * (6) leaves the run's last character to the next piece when a non-space follows and the run is
 * longer than one). Positions are in code points (a surrogate pair is one; a lone surrogate is one
 * of class Other); every `\s` character is in the BMP, so whitespace is counted in code units.
 * test/inference/pretokenize.test.ts compares it piece by piece with the regex on seeded text.
 */
import { charClass, codePointAt, LETTER, NEWLINE, NUMBER, OTHER } from './char-class.ts';

/** The pattern this scanner implements (js-tiktoken's `cl100k_base.pat_str`), for tests. */
export const CL100K_PATTERN =
  "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const width = (cp: number): number => (cp > 0xffff ? 2 : 1);

/** End of the run of code points of class `cls` starting at `i`. */
function runOf(t: string, i: number, len: number, cls: number): number {
  while (i < len) {
    const cp = codePointAt(t, i);
    if (charClass(cp) !== cls) break;
    i += width(cp);
  }
  return i;
}

/** Whether the ASCII letter at `i` is `lower` in either case (`lower` a lowercase ASCII letter). */
const isAscii = (t: string, i: number, lower: number): boolean => (t.charCodeAt(i) | 0x20) === lower;

/** End (code-unit index) of the cl100k piece starting at `i` (i < len = t.length). */
export function cl100kPieceEnd(t: string, i: number, len: number): number {
  const c = t.charCodeAt(i);
  // (1) Contractions. `| 0x20` folds only ASCII case: no code unit above 0x7f folds onto a letter.
  if (c === 39 && i + 1 < len) {
    if (isAscii(t, i + 1, 115) || isAscii(t, i + 1, 116) || isAscii(t, i + 1, 109) || isAscii(t, i + 1, 100)) return i + 2; // s t m d
    if (i + 2 < len) {
      if ((isAscii(t, i + 1, 114) || isAscii(t, i + 1, 118)) && isAscii(t, i + 2, 101)) return i + 3; // re ve
      if (isAscii(t, i + 1, 108) && isAscii(t, i + 2, 108)) return i + 3; // ll
    }
  }
  const cp = codePointAt(t, i);
  const k = charClass(cp);
  const w = width(cp);
  // (2) Letters, or one prefix that is neither \r, \n, a letter nor a number, then letters.
  if (k === LETTER) return runOf(t, i + w, len, LETTER);
  if (k !== NUMBER && k !== NEWLINE && i + w < len) {
    const next = codePointAt(t, i + w);
    if (charClass(next) === LETTER) return runOf(t, i + w + width(next), len, LETTER);
  }
  // (3) One to three numbers.
  if (k === NUMBER) {
    let j = i + w;
    for (let n = 1; n < 3 && j < len; n++) {
      const d = codePointAt(t, j);
      if (charClass(d) !== NUMBER) break;
      j += width(d);
    }
    return j;
  }
  // (4) Symbols (with one leading U+0020), then any \r \n.
  let sym = -1;
  if (k === OTHER) sym = i + w;
  else if (c === 32 && i + 1 < len) {
    const next = codePointAt(t, i + 1);
    if (charClass(next) === OTHER) sym = i + 1 + width(next);
  }
  if (sym >= 0) {
    let j = runOf(t, sym, len, OTHER);
    while (j < len && (t.charCodeAt(j) === 13 || t.charCodeAt(j) === 10)) j++;
    return j;
  }
  // Here `c` is whitespace (class SPACE or NEWLINE): the run of \s starting at i.
  let j = i + 1;
  let lastNewline = c === 13 || c === 10 ? i : -1;
  for (; j < len; j++) {
    const d = t.charCodeAt(j);
    const dk = d < 128 ? charClass(d) : charClass(codePointAt(t, j));
    if (dk === NEWLINE) lastNewline = j;
    else if (dk !== 3 /* SPACE */) break;
  }
  if (lastNewline >= 0) return lastNewline + 1; // (5)
  if (j === len) return j; // (6) at the end of the text: nothing \S follows
  if (j - i >= 2) return j - 1; // (6)
  return j; // (7)
}

/** The pieces of `t` as [start, end) pairs (tests; the counter scans in place). */
export function cl100kPieces(t: string): string[] {
  const out: string[] = [];
  for (let i = 0, len = t.length; i < len; ) {
    const e = cl100kPieceEnd(t, i, len);
    out.push(t.slice(i, e));
    i = e;
  }
  return out;
}
