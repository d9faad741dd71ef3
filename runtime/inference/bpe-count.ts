/**
 * A count-only byte-pair encoder over js-tiktoken's own `cl100k_base` rank table.
 *
 * Why not the library's `encode`: measured in bench/tokens.ts, js-tiktoken keys its rank map by
 * comma-joined byte lists and re-joins every pair on each merge step (≈0.3 MiB/s on base64), the
 * WebAssembly `tiktoken` pays a copy in and a token array out per call and `gpt-tokenizer` disagrees
 * on random code points. Counting needs no token ids, only how many parts the merge leaves, so this
 * keeps the library's ranks and replaces the rest:
 * - pieces come from a scanner over char codes (pretokenize.ts, exactly the library's pattern), not
 *   from `RegExp.exec` (the regex alone was slower than the target, and allocates every match);
 * - each piece is encoded to UTF-8 from the text in place into a reused buffer;
 * - a piece that is itself a token counts 1 after one lookup (most pieces of high-entropy text are
 *   one to three tokens);
 * - ranks of byte pairs come from a direct 64 Ki table, longer sequences from one open-addressed
 *   table of integer arrays (hash, then a byte compare against a pool of all token bytes);
 * - the merge is the rank scan over a typed-array part list (tiktoken's own for short pieces) and a
 *   typed-array min-heap for long ones; both merge the lowest rank first, leftmost on ties, the
 *   library's rule, so the count equals `encode(text, [], []).length` exactly
 *   (test/inference/tokens.test.ts and pretokenize.test.ts compare them);
 * - counts of pieces of 5–32 bytes are cached in a direct-mapped table of fixed size (bounded by
 *   bytes, holding copies of piece bytes, never a string: nothing pins a counted text), skipped
 *   while it misses (measured paired: without the skip it cost 9–14% on base64; on prose and JSON
 *   it saves 5–30%).
 */
import { cl100kPieceEnd } from './pretokenize.ts';

export interface BpeCounter {
  /** Tokens of `text` (specials count as plain text). */
  count(text: string): number;
}

/** "No rank": larger than every rank, so it loses every min and fits an Int32Array. */
export const NONE = 0x7fffffff;

/** The first (up to) four of the n ≥ 3 bytes at b[i..], packed little-endian. */
export function pack4(b: Uint8Array, i: number, n: number): number {
  const v = b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16);
  return n > 3 ? v | (b[i + 3]! << 24) : v;
}

/** Hash of the n ≥ 3 bytes at b[i..] whose first four are `head` (no loop for 3–4 bytes). */
export function hashOf(b: Uint8Array, i: number, n: number, head: number): number {
  let h = Math.imul(head ^ Math.imul(n, 0x7feb352d), 0x9e3779b1);
  for (let k = i + 4, j = i + n; k < j; k++) h = Math.imul(h ^ b[k]!, 0x01000193);
  return Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
}

/**
 * Ranks of every token's bytes: single bytes and pairs in direct tables, longer sequences in one
 * open-addressed table whose slots are two int32s side by side (the first four bytes packed; the
 * rank with the length), so a probe touches one cache line of a 2 MiB table and, for sequences of
 * 3–4 bytes (most lookups of a merge), nothing else. Longer ones compare the rest with a pool of
 * all token bytes.
 */
class Ranks {
  readonly pair: Int32Array;
  readonly single: Int32Array;
  readonly maxLen: number;
  private readonly pool: Uint8Array;
  /** Slot k: [2k] bytes 0–3 packed, [2k+1] length << 17 | rank (-1: empty). */
  private readonly slots: Int32Array;
  /** Slot k: where the token's bytes start in the pool. */
  private readonly offsets: Int32Array;
  private readonly shift: number;
  private readonly mask: number;

  constructor(t: Cl100kTables) {
    this.pair = t.pair;
    this.single = t.single;
    this.pool = t.pool;
    this.slots = t.slots;
    this.offsets = t.offsets;
    this.maxLen = t.maxLen;
    this.shift = 32 - t.bits;
    this.mask = (1 << t.bits) - 1;
  }

  /** Rank of the n bytes at b[i..] (3 ≤ n ≤ maxLen) with head `head` and hash `h`, or NONE. */
  long(b: Uint8Array, i: number, n: number, head: number, h: number): number {
    const slots = this.slots;
    const mask = this.mask;
    const tag = n << 17;
    for (let s = h >>> this.shift; ; s = (s + 1) & mask) {
      const v = slots[2 * s + 1]!;
      if (v < 0) return NONE;
      if (slots[2 * s] !== head || (v & 0x1fe0000) !== tag) continue;
      if (n <= 4) return v & 0x1ffff;
      const o = this.offsets[s]! - i;
      let k = i + 4;
      const j = i + n;
      while (k < j && this.pool[o + k] === b[k]) k++;
      if (k === j) return v & 0x1ffff;
    }
  }

  /** Rank of b[i..j) (j - i ≥ 2), or NONE. */
  get(b: Uint8Array, i: number, j: number): number {
    const n = j - i;
    if (n === 2) return this.pair[(b[i]! << 8) | b[i + 1]!]!;
    if (n > this.maxLen) return NONE;
    const head = pack4(b, i, n);
    return this.long(b, i, n, head, hashOf(b, i, n, head));
  }
}

/**
 * The rank tables (≈ 4 MiB): typed arrays over SharedArrayBuffers when built, so the thread that
 * builds them (a worker: parsing the 100 k ranks allocates ≈ 40 MB on the way) can hand them to
 * others, which count with them without building or copying anything (runtime/inference/tokens.ts);
 * views of a mapped file when read back from one (bpe-table-file.ts). Only ever read.
 */
export interface Cl100kTables {
  pair: Int32Array;
  single: Int32Array;
  pool: Uint8Array;
  slots: Int32Array;
  offsets: Int32Array;
  maxLen: number;
  bits: number;
}

/** Pieces up to this many bytes merge by the linear rank scan, longer ones through the heap. */
const SCAN_MAX = 128;
/** The piece cache: direct-mapped, SLOTS × SLOT_BYTES bytes of piece copies (128 KiB). */
const CACHE_MIN = 5;
const SLOT_BYTES = 32;
const SLOT_BITS = 12;
/** Cache lookups per hit-rate window; under one hit in 16, the next 16 windows' pieces skip it. */
const CACHE_WINDOW = 1024;

/**
 * scanMerge's merge for long pieces, in O(n log n): a min-heap of (rank, start, end) over a linked
 * list of parts, stale entries skipped. Lowest rank first and, among equal ranks, the leftmost
 * part: the order the linear scan takes.
 */
function heapMerge(ranks: Ranks, b: Uint8Array, n: number): number {
  const pair = ranks.pair;
  const next = new Int32Array(n + 1);
  const prev = new Int32Array(n + 1);
  const alive = new Uint8Array(n + 1).fill(1);
  for (let i = 0; i <= n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
  }
  // At most n - 1 initial entries and two per merge (≤ n - 1 merges).
  const cap = 3 * n;
  const hr = new Int32Array(cap),
    hs = new Int32Array(cap),
    he = new Int32Array(cap);
  let size = 0;
  const less = (a: number, c: number) => hr[a]! < hr[c]! || (hr[a] === hr[c] && hs[a]! < hs[c]!);
  const swap = (a: number, c: number) => {
    let t = hr[a]!;
    hr[a] = hr[c]!;
    hr[c] = t;
    t = hs[a]!;
    hs[a] = hs[c]!;
    hs[c] = t;
    t = he[a]!;
    he[a] = he[c]!;
    he[c] = t;
  };
  const push = (r: number, s: number, e: number) => {
    if (r === NONE) return;
    let i = size++;
    hr[i] = r;
    hs[i] = s;
    he[i] = e;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(i, p)) break;
      swap(i, p);
      i = p;
    }
  };
  for (let i = 0; i < n - 1; i++) push(pair[(b[i]! << 8) | b[i + 1]!]!, i, i + 2);
  let parts = n;
  while (size > 0) {
    const st = hs[0]!,
      e = he[0]!;
    swap(0, --size);
    for (let i = 0; ; ) {
      const l = 2 * i + 1,
        r = l + 1;
      let m = i;
      if (l < size && less(l, m)) m = l;
      if (r < size && less(r, m)) m = r;
      if (m === i) break;
      swap(i, m);
      i = m;
    }
    // Stale unless `st` starts a live part whose right neighbour ends at `e`.
    if (!alive[st]) continue;
    const mid = next[st]!;
    if (mid >= n || next[mid] !== e) continue;
    alive[mid] = 0;
    next[st] = e;
    prev[e] = st;
    parts--;
    if (e < n) push(ranks.get(b, st, next[e]!), st, next[e]!);
    const p = prev[st]!;
    if (p >= 0) push(ranks.get(b, p, e), p, e);
  }
  return parts;
}

/** UTF-8 of t[i..e) into b, which has room for 3 bytes a code unit (a lone surrogate as U+FFFD, like TextEncoder); the byte count. */
function utf8Into(b: Uint8Array, t: string, i: number, e: number): number {
  let o = 0;
  for (; i < e; i++) {
    let c = t.charCodeAt(i);
    if (c < 0x80) {
      b[o++] = c;
      continue;
    }
    if (c < 0x800) {
      b[o++] = 0xc0 | (c >> 6);
      b[o++] = 0x80 | (c & 63);
      continue;
    }
    if ((c & 0xfc00) === 0xd800 && i + 1 < e) {
      const d = t.charCodeAt(i + 1);
      if ((d & 0xfc00) === 0xdc00) {
        i++;
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        b[o++] = 0xf0 | (c >> 18);
        b[o++] = 0x80 | ((c >> 12) & 63);
        b[o++] = 0x80 | ((c >> 6) & 63);
        b[o++] = 0x80 | (c & 63);
        continue;
      }
    }
    if ((c & 0xf800) === 0xd800) c = 0xfffd;
    b[o++] = 0xe0 | (c >> 12);
    b[o++] = 0x80 | ((c >> 6) & 63);
    b[o++] = 0x80 | (c & 63);
  }
  return o;
}

/**
 * A counter over built tables (shared or not). Its scratch space and piece cache are its own
 * (≈ 160 KiB), so any number of threads count over one set of tables.
 */
export function cl100kCounter(tables: Cl100kTables): BpeCounter {
  const ranks = new Ranks(tables);
  const { pair } = ranks;
  const maxLen = ranks.maxLen;

  const cacheBytes = new Uint8Array(SLOT_BYTES << SLOT_BITS);
  const cacheHash = new Int32Array(1 << SLOT_BITS);
  const cacheLen = new Uint8Array(1 << SLOT_BITS); // 0: empty
  const cacheCount = new Int32Array(1 << SLOT_BITS);
  let probes = 0;
  let hits = 0;
  let bypass = 0;

  // Scratch arrays reused across pieces, grown on demand.
  let bytes = new Uint8Array(1024);
  const starts = new Int32Array(SCAN_MAX + 1);
  const pr = new Int32Array(SCAN_MAX);

  /**
   * Parts left after merging b[0..n) (3 ≤ n ≤ SCAN_MAX; the whole piece is not a token). Part k
   * spans starts[k]..starts[k+1]; pr[k] is the rank of part k joined with part k+1.
   */
  function scanMerge(b: Uint8Array, n: number): number {
    for (let i = 0; i < n - 1; i++) {
      starts[i] = i;
      pr[i] = pair[(b[i]! << 8) | b[i + 1]!]!;
    }
    starts[n - 1] = n - 1;
    starts[n] = n;
    let parts = n;
    // With two parts left, their pair is the whole piece: not a token.
    while (parts > 2) {
      let min = NONE;
      let at = -1;
      for (let k = 0; k < parts - 1; k++) {
        if (pr[k]! < min) {
          min = pr[k]!;
          at = k;
        }
      }
      if (at < 0) break;
      // Part at+1 joins part at: drop boundary at+1.
      for (let k = at + 1; k < parts; k++) starts[k] = starts[k + 1]!;
      for (let k = at + 1; k < parts - 2; k++) pr[k] = pr[k + 1]!;
      parts--;
      pr[at] = at + 1 < parts ? ranks.get(b, starts[at]!, starts[at + 2]!) : NONE;
      if (at > 0) pr[at - 1] = ranks.get(b, starts[at - 1]!, starts[at + 1]!);
    }
    return parts;
  }

  /** UTF-8 of t[i..e) into the scratch buffer, grown first when it may be too small. */
  function toBytes(t: string, i: number, e: number): number {
    if (bytes.length < (e - i) * 3) bytes = new Uint8Array((e - i) * 3);
    return utf8Into(bytes, t, i, e);
  }

  function pieceCount(t: string, i: number, e: number): number {
    if (e - i === 1 && t.charCodeAt(i) < 0x80) return 1;
    const n = toBytes(t, i, e);
    const b = bytes; // after toBytes, which may have grown it
    if (n === 1) return 1;
    if (n === 2) return pair[(b[0]! << 8) | b[1]!] !== NONE ? 1 : 2;
    if (n > maxLen) return n > SCAN_MAX ? heapMerge(ranks, b, n) : scanMerge(b, n);
    const head = pack4(b, 0, n);
    const h = hashOf(b, 0, n, head);
    if (ranks.long(b, 0, n, head, h) !== NONE) return 1;
    if (n < CACHE_MIN || n > SLOT_BYTES) return n > SCAN_MAX ? heapMerge(ranks, b, n) : scanMerge(b, n);
    // High-entropy text never hits: after a window of few hits, skip the cache for a while.
    if (bypass > 0) {
      bypass--;
      return scanMerge(b, n);
    }
    if (++probes === CACHE_WINDOW) {
      if (hits < CACHE_WINDOW / 16) bypass = CACHE_WINDOW * 16;
      probes = hits = 0;
    }
    const slot = h >>> (32 - SLOT_BITS);
    const base = slot * SLOT_BYTES;
    if (cacheLen[slot] === n && cacheHash[slot] === h) {
      let k = 0;
      while (k < n && cacheBytes[base + k] === b[k]) k++;
      if (k === n) {
        hits++;
        return cacheCount[slot]!;
      }
    }
    const c = scanMerge(b, n);
    for (let k = 0; k < n; k++) cacheBytes[base + k] = b[k]!;
    cacheLen[slot] = n;
    cacheHash[slot] = h;
    cacheCount[slot] = c;
    return c;
  }

  return {
    count(text: string): number {
      let n = 0;
      for (let i = 0, len = text.length; i < len; ) {
        const e = cl100kPieceEnd(text, i, len);
        n += pieceCount(text, i, e);
        i = e;
      }
      return n;
    },
  };
}
