/**
 * The chunker as it was before chunk.ts scanned char codes through char-class.ts (regex scans for
 * long runs, a regex test per non-ASCII character): kept verbatim as the reference the current
 * chunker must reproduce cut for cut (test/inference/chunk.test.ts). Its header, as it was:
 *
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
 *
 * These cuts define the runtime's count: tokens.ts counts chunk by chunk, and the counts are pinned
 * by test/inference/token-counts.json.
 */
export const DEFAULT_MAX_CHUNK = 2048;
export const DEFAULT_MAX_RUN = 64;

enum C {
  Letter = 1,
  Number = 2,
  Space = 3, // whitespace other than \r \n
  Newline = 4, // \r or \n
  Other = 5,
}

const LETTER = /\p{L}/u;
const NUMBER = /\p{N}/u;
const SPACE = /\s/u;

function classify(cp: number): C {
  if (cp < 128) {
    if ((cp >= 97 && cp <= 122) || (cp >= 65 && cp <= 90)) return C.Letter;
    if (cp >= 48 && cp <= 57) return C.Number;
    if (cp === 10 || cp === 13) return C.Newline;
    if (cp === 32 || cp === 9 || cp === 11 || cp === 12) return C.Space;
    return C.Other;
  }
  const ch = String.fromCodePoint(cp);
  if (LETTER.test(ch)) return C.Letter;
  if (NUMBER.test(ch)) return C.Number;
  if (SPACE.test(ch)) return C.Space;
  return C.Other;
}

/** Whether cl100k's pre-tokenizer pieces never straddle a cut between classes `a` and `b`. */
function safeBetween(a: C, b: C): boolean {
  switch (a) {
    case C.Letter:
      return b !== C.Letter;
    case C.Number:
      return b !== C.Number;
    case C.Other:
      return b === C.Number || b === C.Space;
    case C.Newline:
      return b !== C.Newline && b !== C.Space;
    case C.Space:
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

const longRunCache = new Map<number, RegExp>();
/**
 * The start of a run of one piece class longer than `maxRun` (letters, punctuation/symbols,
 * whitespace of any mix): exactly `maxRun + 1` code points, one capture group per class.
 * A fixed count, never `{n,}`: V8 keeps a backtrack entry per repetition of an open-ended
 * quantifier, and a run of ≈ 5.5 M characters overflowed its stack ("Maximum call stack size
 * exceeded"). The run's end is then found in bounded steps by {@link RUN_REST}.
 */
function longRunStart(maxRun: number): RegExp {
  let re = longRunCache.get(maxRun);
  if (re === undefined) {
    const n = maxRun + 1;
    re = new RegExp(`(\\p{L}{${n}})|([^\\s\\p{L}\\p{N}]{${n}})|(\\s{${n}})`, 'gu');
    longRunCache.set(maxRun, re);
  }
  re.lastIndex = 0;
  return re;
}

/** The rest of a run of each class, at most 65 536 code points per step (sticky). */
const RUN_STEP = 65_536;
const RUN_REST = [new RegExp(`\\p{L}{1,${RUN_STEP}}`, 'uy'), new RegExp(`[^\\s\\p{L}\\p{N}]{1,${RUN_STEP}}`, 'uy'), new RegExp(`\\s{1,${RUN_STEP}}`, 'uy')];

/** End (code-unit index) of the run of class `cls` that continues at `from`. */
function runEnd(text: string, cls: number, from: number): number {
  const re = RUN_REST[cls]!;
  let end = from;
  for (;;) {
    re.lastIndex = end;
    const m = re.exec(text);
    if (m === null) return end;
    end += m[0].length;
    if (m[0].length < RUN_STEP) return end; // shorter than a full step: cannot be a full step of code points either
  }
}

const isLow = (u: number) => u >= 0xdc00 && u <= 0xdfff;

/** Class of the code point ending just before code-unit index `i` (i > 0). */
function classBefore(text: string, i: number): C {
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
  if (a === C.Number && b === C.Number) {
    let j = i;
    while (j > floor && classBefore(text, j) === C.Number) j--;
    return (i - j) % 3 === 0;
  }
  return safeBetween(a, b);
}

/** Split `text` into encodable chunks (see the module comment). Linear in `text.length`. */
export function chunkText(text: string, opts: ChunkOptions = {}, stats?: ChunkStats): string[] {
  const maxChunk = Math.max(2, opts.maxChunk ?? DEFAULT_MAX_CHUNK);
  const maxRun = Math.max(1, opts.maxRun ?? DEFAULT_MAX_RUN);
  if (text === '') return [];
  // Forced cuts inside long runs, found by one native regex scan.
  const forced: number[] = [];
  const re = longRunStart(maxRun);
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const cls = m[1] !== undefined ? 0 : m[2] !== undefined ? 1 : 2;
    const end = runEnd(text, cls, m.index + m[0].length);
    for (let c = m.index + maxRun; c < end; c += maxRun) {
      const cut = isLow(text.charCodeAt(c)) ? c + 1 : c;
      if (cut < end) forced.push(cut);
    }
    re.lastIndex = end;
  }
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
