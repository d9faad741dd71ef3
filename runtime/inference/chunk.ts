/**
 * Cutting text into chunks that a BPE encoder handles in linear time, without changing the count.
 *
 * cl100k's BPE merge is quadratic in the length of one pre-tokenizer piece, and a run with no
 * break point (`"a" × 40 000`, a long `=====` bar, unspaced CJK text, a long whitespace run) is
 * one piece. So the text is cut into chunks before encoding:
 *
 * - Chunks are at most `maxChunk` (2 048) characters and end, where possible, at a **safe boundary**:
 *   a position where cl100k's pre-tokenizer always starts a new piece and whose pieces on either
 *   side need no lookahead across it (letter→non-letter, digit→non-digit, digit run at a multiple of
 *   3, punctuation→digit or space, newline→non-whitespace). Cutting there changes no piece, so the
 *   count equals unchunked encoding exactly.
 * - A run of one piece class — letters, punctuation/symbols, or whitespace of any mix — longer than
 *   `maxRun` (64) is cut every `maxRun` characters. Only text with such runs counts differently from
 *   unchunked encoding (by a token or so per cut); it is what keeps the cost O(n · maxRun).
 * - A window with neither is hard-cut at `maxChunk` (on a code point boundary). The safe boundary is
 *   searched backwards from the window end, so chunking costs O(n).
 * - Characters are classed by char-class.ts, the pre-tokenizer's own table, in one pass over char
 *   codes.
 *
 * These cuts define the runtime's count: tokens.ts counts chunk by chunk, and the counts are pinned
 * by test/inference/token-counts.json.
 */
import { charClass, codePointAt, LETTER, NEWLINE, NUMBER, OTHER, SPACE } from './char-class.ts';

export const DEFAULT_MAX_CHUNK = 2048;
export const DEFAULT_MAX_RUN = 64;

// Classes of char-class.ts (the pre-tokenizer's): LETTER, NUMBER, SPACE (\s but \r \n), NEWLINE, OTHER.
const classify = charClass;

/** Whether cl100k's pre-tokenizer pieces never straddle a cut between classes `a` and `b`. */
function safeBetween(a: number, b: number): boolean {
  switch (a) {
    case LETTER:
      return b !== LETTER;
    case NUMBER:
      return b !== NUMBER;
    case OTHER:
      return b === NUMBER || b === SPACE;
    case NEWLINE:
      return b !== NEWLINE && b !== SPACE;
    default: // SPACE
      return false;
  }
}

export interface ChunkOptions {
  maxChunk?: number;
  maxRun?: number;
}

export interface ChunkStats {
  /** Cuts inside a long run or hard cuts: the only places a count may differ from unchunked encoding. */
  inexactCuts: number;
}

/** The run class of a character class: letters, symbols, whitespace of any mix; -1 for numbers. */
const RUN_CLASS = [1, 0, -1, 2, 2]; // OTHER, LETTER, NUMBER, SPACE, NEWLINE

/**
 * Forced cuts inside runs of one run class (letters, symbols, whitespace of any mix) longer than
 * `maxRun` code points: every `maxRun` code units from the run's start, moved off a low surrogate.
 * One pass over char codes (it was a regex scan for `maxRun + 1` characters of a class, which tried
 * that many characters at every position; test/inference/chunk.test.ts holds the two equal).
 */
function forcedCuts(text: string, maxRun: number): number[] {
  const forced: number[] = [];
  const len = text.length;
  for (let i = 0; i < len; ) {
    let cp = codePointAt(text, i);
    const k = RUN_CLASS[classify(cp)]!;
    let j = i + (cp > 0xffff ? 2 : 1);
    if (k < 0) {
      i = j;
      continue;
    }
    let n = 1;
    for (; j < len; n++) {
      cp = codePointAt(text, j);
      if (RUN_CLASS[classify(cp)] !== k) break;
      j += cp > 0xffff ? 2 : 1;
    }
    if (n > maxRun) {
      for (let c = i + maxRun; c < j; c += maxRun) {
        const cut = isLow(text.charCodeAt(c)) ? c + 1 : c;
        if (cut < j) forced.push(cut);
      }
    }
    i = j;
  }
  return forced;
}

const isLow = (u: number) => u >= 0xdc00 && u <= 0xdfff;

/** Class of the code point ending just before code-unit index `i` (i > 0). */
function classBefore(text: string, i: number): number {
  const u = text.charCodeAt(i - 1);
  if (isLow(u) && i >= 2) return classify(text.codePointAt(i - 2)!);
  return classify(u);
}

/**
 * Whether cutting before code-unit index `i` (start < i < end of text) leaves every pre-tokenizer
 * piece intact. Inside a digit run, only cuts a multiple of 3 digits from the run start are safe;
 * the run start is searched back no further than `floor` (a chunk start, itself such a cut).
 */
function safeAt(text: string, i: number, floor: number): boolean {
  const u = text.charCodeAt(i);
  if (isLow(u)) return false; // inside a surrogate pair
  const b = classify(text.codePointAt(i)!);
  const a = classBefore(text, i);
  if (a === NUMBER && b === NUMBER) {
    let j = i;
    while (j > floor && classBefore(text, j) === NUMBER) j--;
    return (i - j) % 3 === 0;
  }
  return safeBetween(a, b);
}

/** Split `text` into encodable chunks (see the module comment). Linear in `text.length`. */
export function chunkText(text: string, opts: ChunkOptions = {}, stats?: ChunkStats): string[] {
  const maxChunk = Math.max(2, opts.maxChunk ?? DEFAULT_MAX_CHUNK);
  const maxRun = Math.max(1, opts.maxRun ?? DEFAULT_MAX_RUN);
  if (text === '') return [];
  const forced = forcedCuts(text, maxRun);
  if (forced.length === 0 && text.length <= maxChunk) return [text];
  const out: string[] = [];
  let pos = 0;
  let f = 0; // next forced cut index
  while (pos < text.length) {
    while (f < forced.length && forced[f]! <= pos) f++;
    const nextForced = f < forced.length ? forced[f]! : Infinity;
    const windowEnd = pos + maxChunk;
    if (nextForced <= windowEnd && nextForced < text.length) {
      if (stats) stats.inexactCuts++;
      out.push(text.slice(pos, nextForced));
      pos = nextForced;
      continue;
    }
    if (windowEnd >= text.length) {
      out.push(text.slice(pos));
      break;
    }
    let cut = -1;
    for (let i = windowEnd; i > pos; i--) {
      if (safeAt(text, i, pos)) {
        cut = i;
        break;
      }
    }
    if (cut < 0) {
      cut = isLow(text.charCodeAt(windowEnd)) ? windowEnd - 1 : windowEnd;
      if (cut <= pos) cut = windowEnd + 1;
      if (stats) stats.inexactCuts++;
    }
    out.push(text.slice(pos, cut));
    pos = cut;
  }
  return out;
}

/**
 * Tokens of `text`: the sum of `countChunk` over its chunks. The one definition of a text's count,
 * used by the counting worker and by the main thread's in-place count (runtime/inference/tokens.ts),
 * so both always agree.
 */
export function countChunked(text: string, opts: ChunkOptions, countChunk: (chunk: string) => number): number {
  let n = 0;
  for (const c of chunkText(text, opts)) n += countChunk(c);
  return n;
}
