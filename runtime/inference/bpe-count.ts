/**
 * A count-only byte-pair encoder over js-tiktoken's own `cl100k_base` rank table and pre-tokenizer
 * pattern.
 *
 * Why not the library's `encode`: measured in bench/tokens.bench.ts, js-tiktoken keys its rank map by
 * comma-joined byte lists and re-joins every pair on each merge step (≈0.3 MiB/s on base64), the
 * WebAssembly `tiktoken` pays a copy in and a token array out per call and `gpt-tokenizer` disagrees
 * on random code points. Counting needs no token ids, only how many parts the merge leaves, so this
 * keeps the library's data (ranks, pattern) and replaces only the merge loop: the piece is encoded
 * to UTF-8 into a reused buffer, ranks of sequences up to 6 bytes (nearly every lookup) sit in an
 * integer-keyed table, longer ones in a Map keyed by latin1 strings, pair ranks are updated in place
 * after each merge, and counts of longer pieces are memoised (bounded). The merge rule is the library's (lowest rank
 * first, leftmost on ties), so the count equals `encode(text, [], []).length` exactly
 * (test/inference/tokens.test.ts checks it on fixed inputs).
 */
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';

export interface BpeCounter {
  /** Tokens of `text` (specials count as plain text). */
  count(text: string): number;
}

/**
 * Ranks of byte sequences up to 6 bytes long, in an open-addressed table keyed by the bytes packed
 * into two int32s (bytes 0–3; bytes 4–5 and the length). Nearly every lookup of a merge is this
 * short, and a lookup here hashes two integers where a string-keyed Map would first have to cut,
 * flatten and hash a new string (measured: that was most of the counter's time on base64).
 */
class ShortRanks {
  private readonly lo: Int32Array;
  private readonly hi: Int32Array;
  private readonly val: Int32Array;
  private readonly mask: number;

  constructor(entries: number) {
    let size = 1;
    while (size < entries * 2) size <<= 1;
    this.mask = size - 1;
    this.lo = new Int32Array(size);
    this.hi = new Int32Array(size);
    this.val = new Int32Array(size).fill(-1);
  }

  private static slot(lo: number, hi: number, mask: number): number {
    return Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> 7 & mask;
  }

  set(b: Uint8Array, i: number, j: number, rank: number): void {
    const lo = packLo(b, i, j), hi = packHi(b, i, j);
    let h = ShortRanks.slot(lo, hi, this.mask);
    while (this.val[h] !== -1) h = (h + 1) & this.mask;
    this.lo[h] = lo; this.hi[h] = hi; this.val[h] = rank;
  }

  /** The rank of b[i..j) (j - i ≤ 6), or Infinity. */
  get(b: Uint8Array, i: number, j: number): number {
    const lo = packLo(b, i, j), hi = packHi(b, i, j);
    const mask = this.mask;
    for (let h = ShortRanks.slot(lo, hi, mask); ; h = (h + 1) & mask) {
      const v = this.val[h]!;
      if (v === -1) return Infinity;
      if (this.lo[h] === lo && this.hi[h] === hi) return v;
    }
  }
}

function packLo(b: Uint8Array, i: number, j: number): number {
  let lo = 0;
  for (let k = 0, e = Math.min(j, i + 4); i + k < e; k++) lo |= b[i + k]! << (k << 3);
  return lo;
}

function packHi(b: Uint8Array, i: number, j: number): number {
  let hi = (j - i) << 16;
  for (let k = 0; i + 4 + k < j; k++) hi |= b[i + 4 + k]! << (k << 3);
  return hi;
}

const SHORT = 6;

/** Builds the counter (≈100 ms: parses 100 k ranks). Build it off the main thread. */
export function buildCl100kCounter(pieceMemo = 65_536): BpeCounter {
  // Longer byte sequences stay in a Map keyed by their latin1 string (rare in a merge).
  const longRanks = new Map<string, number>();
  const lines = cl100k_base.bpe_ranks.split('\n');
  const short = new ShortRanks(110_000);
  for (const line of lines) {
    if (!line) continue;
    const parts = line.split(' ');
    const offset = Number.parseInt(parts[1]!, 10);
    for (let i = 2; i < parts.length; i++) {
      const bytes = Buffer.from(parts[i]!, 'base64');
      if (bytes.length <= SHORT) short.set(bytes, 0, bytes.length, offset + i - 2);
      else longRanks.set(bytes.toString('latin1'), offset + i - 2);
    }
  }
  const pattern = new RegExp(cl100k_base.pat_str, 'gu');
  // Piece → count, bounded by entries (pieces are short: the chunker cuts long runs).
  const memo = new Map<string, number>();
  const latin1 = new TextDecoder('latin1');
  const rank = (b: Uint8Array, i: number, j: number): number =>
    j - i <= SHORT ? short.get(b, i, j) : longRanks.get(latin1.decode(b.subarray(i, j))) ?? Infinity;

  // Scratch arrays reused across pieces (pieces are short: the chunker cuts long runs).
  let bytes = new Uint8Array(1024);
  let starts = new Int32Array(256);
  let pairRank = new Float64Array(256);

  function merge(b: Uint8Array, n: number): number {
    if (n <= 1) return 1;
    if (rank(b, 0, n) !== Infinity) return 1;
    if (n === 2) return 2;
    if (n > 24) return heapMerge(b, n);
    if (starts.length <= n) {
      starts = new Int32Array(n * 2);
      pairRank = new Float64Array(n * 2);
    }
    // Part k spans starts[k]..starts[k+1]; pairRank[k] is the rank of part k joined with part k+1.
    for (let i = 0; i <= n; i++) starts[i] = i;
    for (let i = 0; i < n - 1; i++) pairRank[i] = rank(b, i, i + 2);
    let parts = n;
    for (;;) {
      let min = Infinity;
      let at = -1;
      for (let k = 0; k < parts - 1; k++) {
        const r = pairRank[k]!;
        if (r < min) { min = r; at = k; }
      }
      if (at < 0) break;
      // Merge part at+1 into part at: drop boundary at+1.
      starts.copyWithin(at + 1, at + 2, parts + 1);
      pairRank.copyWithin(at + 1, at + 2, parts);
      parts--;
      pairRank[at] = at + 1 < parts ? rank(b, starts[at]!, starts[at + 2]!) : Infinity;
      if (at > 0) pairRank[at - 1] = rank(b, starts[at - 1]!, starts[at + 1]!);
    }
    return parts;
  }

  /**
   * The same merge for long pieces in O(n log n): a min-heap of (rank, start) over a linked list of
   * parts, stale entries skipped. Lowest rank first and, among equal ranks, the leftmost part: the
   * order the linear scan takes.
   */
  function heapMerge(b: Uint8Array, n: number): number {
    const next = new Int32Array(n + 1);
    const prev = new Int32Array(n + 1);
    const alive = new Uint8Array(n + 1);
    for (let i = 0; i <= n; i++) { next[i] = i + 1; prev[i] = i - 1; alive[i] = 1; }
    // Heap entries: [rank, start, end-of-right-part] packed in parallel arrays.
    const hr: number[] = [];
    const hs: number[] = [];
    const he: number[] = [];
    const less = (a: number, b: number) => hr[a]! < hr[b]! || (hr[a] === hr[b] && hs[a]! < hs[b]!);
    const swap = (a: number, b: number) => {
      [hr[a], hr[b]] = [hr[b]!, hr[a]!];
      [hs[a], hs[b]] = [hs[b]!, hs[a]!];
      [he[a], he[b]] = [he[b]!, he[a]!];
    };
    const push = (r: number, s: number, e: number) => {
      if (r === Infinity) return;
      let i = hr.length;
      hr.push(r); hs.push(s); he.push(e);
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!less(i, p)) break;
        swap(i, p);
        i = p;
      }
    };
    const pop = () => {
      const last = hr.length - 1;
      swap(0, last);
      const r = hr.pop()!, st = hs.pop()!, e = he.pop()!;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, rr = l + 1;
        let m = i;
        if (l < hr.length && less(l, m)) m = l;
        if (rr < hr.length && less(rr, m)) m = rr;
        if (m === i) break;
        swap(i, m);
        i = m;
      }
      return [r, st, e] as const;
    };
    for (let i = 0; i < n - 1; i++) push(rank(b, i, i + 2), i, i + 2);
    let parts = n;
    while (hr.length) {
      const [, st, e] = pop();
      // Stale unless `st` starts a live part, its right neighbour starts where expected and ends at `e`.
      if (!alive[st]) continue;
      const mid = next[st]!;
      if (mid >= n || next[mid] !== e) continue;
      alive[mid] = 0;
      next[st] = e;
      prev[e] = st;
      parts--;
      if (e < n) push(rank(b, st, next[e]!), st, next[e]!);
      const p = prev[st]!;
      if (p >= 0) push(rank(b, p, e), p, e);
    }
    return parts;
  }

  /** The piece's UTF-8 bytes into the scratch buffer; returns their length. */
  function toBytes(piece: string): number {
    const len = piece.length;
    if (bytes.length < len * 3) bytes = new Uint8Array(len * 3);
    const b = bytes;
    let o = 0;
    for (let i = 0; i < len; i++) {
      let c = piece.charCodeAt(i);
      if (c < 0x80) { b[o++] = c; continue; }
      if (c < 0x800) { b[o++] = 0xc0 | (c >> 6); b[o++] = 0x80 | (c & 63); continue; }
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < len) {
        const d = piece.charCodeAt(i + 1);
        if (d >= 0xdc00 && d < 0xe000) {
          i++;
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          b[o++] = 0xf0 | (c >> 18); b[o++] = 0x80 | ((c >> 12) & 63); b[o++] = 0x80 | ((c >> 6) & 63); b[o++] = 0x80 | (c & 63);
          continue;
        }
      }
      // A lone surrogate encodes as U+FFFD, as Buffer and TextEncoder do.
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      b[o++] = 0xe0 | (c >> 12); b[o++] = 0x80 | ((c >> 6) & 63); b[o++] = 0x80 | (c & 63);
    }
    return o;
  }

  function pieceCount(piece: string): number {
    // Short pieces (most of high-entropy text) merge faster than a memo lookup costs.
    if (piece.length <= SHORT) return merge(bytes, toBytes(piece));
    const hit = memo.get(piece);
    if (hit !== undefined) return hit;
    const c = merge(bytes, toBytes(piece));
    if (memo.size >= pieceMemo) memo.clear();
    // Flattened copy: a key must never pin the text the piece was cut from.
    memo.set((' ' + piece).slice(1), c);
    return c;
  }

  return {
    count(text: string): number {
      let n = 0;
      pattern.lastIndex = 0;
      for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) n += pieceCount(m[0]);
      return n;
    },
  };
}
