/**
 * A count-only byte-pair encoder over js-tiktoken's own `cl100k_base` rank table and pre-tokenizer
 * pattern.
 *
 * Why not the library's `encode`: measured in bench/tokens.bench.ts, js-tiktoken keys its rank map by
 * comma-joined byte lists and re-joins every pair on each merge step (≈0.3 MiB/s on base64), the
 * WebAssembly `tiktoken` pays a copy in and a token array out per call and `gpt-tokenizer` disagrees
 * on random code points. Counting needs no token ids, only how many parts the merge leaves, so this
 * keeps the library's data (ranks, pattern) and replaces only the merge loop: ranks are keyed by the
 * piece's UTF-8 bytes as a latin1 string, pair ranks are updated in place after each merge, and
 * every piece count is memoised by its bytes (bounded). The merge rule is the library's (lowest rank
 * first, leftmost on ties), so the count equals `encode(text, [], []).length` exactly
 * (test/inference/tokens.test.ts checks it on fixed inputs).
 */
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';

export interface BpeCounter {
  /** Tokens of `text` (specials count as plain text). */
  count(text: string): number;
}

/** Builds the counter (≈100 ms: parses 100 k ranks). Build it off the main thread. */
export function buildCl100kCounter(pieceMemo = 65_536): BpeCounter {
  const ranks = new Map<string, number>();
  for (const line of cl100k_base.bpe_ranks.split('\n')) {
    if (!line) continue;
    const parts = line.split(' ');
    const offset = Number.parseInt(parts[1]!, 10);
    for (let i = 2; i < parts.length; i++) ranks.set(Buffer.from(parts[i]!, 'base64').toString('latin1'), offset + i - 2);
  }
  const pattern = new RegExp(cl100k_base.pat_str, 'gu');
  // Piece → count, bounded by entries (pieces are short: the chunker cuts long runs).
  const memo = new Map<string, number>();
  const rank = (b: string, i: number, j: number) => ranks.get(b.slice(i, j)) ?? Infinity;

  // Scratch arrays reused across pieces (pieces are short: the chunker cuts long runs).
  let starts = new Int32Array(256);
  let pairRank = new Float64Array(256);

  function merge(bytes: string): number {
    const n = bytes.length;
    if (n <= 1) return 1;
    if (n === 2) return ranks.has(bytes) ? 1 : 2;
    if (ranks.has(bytes)) return 1;
    if (n > 24) return heapMerge(bytes);
    if (starts.length <= n) {
      starts = new Int32Array(n * 2);
      pairRank = new Float64Array(n * 2);
    }
    // Part k spans starts[k]..starts[k+1]; pairRank[k] is the rank of part k joined with part k+1.
    for (let i = 0; i <= n; i++) starts[i] = i;
    for (let i = 0; i < n - 1; i++) pairRank[i] = rank(bytes, i, i + 2);
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
      pairRank[at] = at + 1 < parts ? rank(bytes, starts[at]!, starts[at + 2]!) : Infinity;
      if (at > 0) pairRank[at - 1] = rank(bytes, starts[at - 1]!, starts[at + 1]!);
    }
    return parts;
  }

  /**
   * The same merge for long pieces in O(n log n): a min-heap of (rank, start) over a linked list of
   * parts, stale entries skipped. Lowest rank first and, among equal ranks, the leftmost part: the
   * order the linear scan takes.
   */
  function heapMerge(bytes: string): number {
    const n = bytes.length;
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
    for (let i = 0; i < n - 1; i++) push(rank(bytes, i, i + 2), i, i + 2);
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
      if (e < n) push(rank(bytes, st, next[e]!), st, next[e]!);
      const p = prev[st]!;
      if (p >= 0) push(rank(bytes, p, e), p, e);
    }
    return parts;
  }

  function isAscii(s: string): boolean {
    for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return false;
    return true;
  }

  function pieceCount(piece: string): number {
    // Short pieces (most of high-entropy text) merge faster than a memo lookup costs.
    if (piece.length <= 6) return merge(isAscii(piece) ? piece : Buffer.from(piece, 'utf8').toString('latin1'));
    const hit = memo.get(piece);
    if (hit !== undefined) return hit;
    const c = merge(isAscii(piece) ? piece : Buffer.from(piece, 'utf8').toString('latin1'));
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
