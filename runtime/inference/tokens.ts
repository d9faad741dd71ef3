/**
 * Host-side token counting with js-tiktoken `cl100k_base`, kept linear.
 *
 * js-tiktoken's BPE merge is quadratic in the length of one pre-tokenizer piece, and a run with no
 * break point (`"a" × 40 000`, a long `=====` bar, unspaced CJK text, a long whitespace run) is
 * one piece: 40 000 × "a" takes ~114 s and blocks the event loop. So the text is cut into chunks
 * before encoding:
 *
 * - Chunks are at most `maxChunk` (2 048) characters and end, where possible, at a **safe boundary**:
 *   a position where cl100k's pre-tokenizer always starts a new piece and whose pieces on either
 *   side need no lookahead across it (letter→non-letter, digit→non-digit, digit run at a multiple of
 *   3, punctuation→digit or space, newline→non-whitespace). Cutting there changes no piece, so the
 *   count equals unchunked encoding exactly.
 * - A run of one piece class — letters, punctuation/symbols, or whitespace of any mix — longer than
 *   `maxRun` (64) is cut every `maxRun` characters (runs are found with one native regex scan). Only text with such runs counts differently from unchunked
 *   encoding (by a token or so per cut); it is what keeps the cost O(n · maxRun).
 * - A window with neither is hard-cut at `maxChunk` (on a code point boundary). The safe boundary is
 *   searched backwards from the window end, so chunking costs O(n) and is usually a few µs per chunk.
 *
 * Chunk counts are memoised (LRU bounded by total characters), so recounting a conversation that
 * grew by one message re-encodes only its tail, and repetitive pathological input is cheap.
 * The encoder (≈0.3–0.5 s to build) is constructed once, lazily.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';

export const DEFAULT_MAX_CHUNK = 2048;
export const DEFAULT_MAX_RUN = 64;

const enum C {
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
/** Runs of one piece class longer than `maxRun`: letters, punctuation/symbols, whitespace (any mix). */
function longRunRegExp(maxRun: number): RegExp {
  let re = longRunCache.get(maxRun);
  if (re === undefined) {
    const n = maxRun + 1;
    re = new RegExp(`\\p{L}{${n},}|[^\\s\\p{L}\\p{N}]{${n},}|\\s{${n},}`, 'gu');
    longRunCache.set(maxRun, re);
  }
  re.lastIndex = 0;
  return re;
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
  const re = longRunRegExp(maxRun);
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const end = m.index + m[0].length;
    for (let c = m.index + maxRun; c < end; c += maxRun) {
      const cut = isLow(text.charCodeAt(c)) ? c + 1 : c;
      if (cut < end) forced.push(cut);
    }
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

let sharedEncoder: Tiktoken | undefined;
/** The process-wide cl100k_base encoder (built on first use). */
export function cl100kEncoder(): Tiktoken {
  sharedEncoder ??= new Tiktoken(cl100k_base);
  return sharedEncoder;
}

/** Exact, unchunked cl100k count. Quadratic on pathological input — for tests and short text only. */
export function countTokensUnchunked(text: string): number {
  return cl100kEncoder().encode(text, [], []).length;
}

export interface TokenCounterOptions extends ChunkOptions {
  /** Upper bound on the characters held as memo keys (default 8 Mi). 0 disables the memo. */
  memoChars?: number;
}

export class TokenCounter {
  readonly #opts: ChunkOptions;
  readonly #memoLimit: number;
  readonly #memo = new Map<string, number>();
  #memoChars = 0;

  constructor(opts: TokenCounterOptions = {}) {
    this.#opts = { maxChunk: opts.maxChunk ?? DEFAULT_MAX_CHUNK, maxRun: opts.maxRun ?? DEFAULT_MAX_RUN };
    this.#memoLimit = opts.memoChars ?? 8 * 1024 * 1024;
  }

  #countChunk(chunk: string): number {
    const hit = this.#memo.get(chunk);
    if (hit !== undefined) {
      this.#memo.delete(chunk);
      this.#memo.set(chunk, hit);
      return hit;
    }
    // Specials are plain text here: `<|endoftext|>` in user text must not throw.
    const n = cl100kEncoder().encode(chunk, [], []).length;
    if (this.#memoLimit > 0 && chunk.length <= this.#memoLimit) {
      this.#memo.set(chunk, n);
      this.#memoChars += chunk.length;
      while (this.#memoChars > this.#memoLimit) {
        const oldest = this.#memo.keys().next().value as string;
        this.#memo.delete(oldest);
        this.#memoChars -= oldest.length;
      }
    }
    return n;
  }

  /** Tokens in `text` (synchronous, linear). */
  count(text: string): number {
    let n = 0;
    for (const c of chunkText(text, this.#opts)) n += this.#countChunk(c);
    return n;
  }

  /**
   * Same count, yielding to the event loop every `sliceMs` of work so a huge payload never blocks
   * timers, sockets or cancellation.
   */
  async countAsync(text: string, opts: { sliceMs?: number; signal?: AbortSignal } = {}): Promise<number> {
    const sliceMs = opts.sliceMs ?? 10;
    let n = 0;
    let t0 = performance.now();
    for (const c of chunkText(text, this.#opts)) {
      n += this.#countChunk(c);
      if (performance.now() - t0 >= sliceMs) {
        await new Promise<void>((r) => setImmediate(r));
        opts.signal?.throwIfAborted();
        t0 = performance.now();
      }
    }
    return n;
  }

  /** Tokens in the JSON serialisation of `value` (how the reference counts a payload). */
  countJson(value: unknown): number {
    return this.count(JSON.stringify(value) ?? '');
  }
}

let sharedCounter: TokenCounter | undefined;
/** The process-wide counter with the default options and memo. */
export function tokenCounter(): TokenCounter {
  sharedCounter ??= new TokenCounter();
  return sharedCounter;
}

export function countTokens(text: string): number {
  return tokenCounter().count(text);
}
