/**
 * Builds the count-only encoder's rank tables (bpe-count.ts) from js-tiktoken's `cl100k_base`
 * ranks. A module of its own so the ranks module (1 MiB of source, and the 1 MiB string it
 * exports) loads only where the tables are built: the token counter's worker, tests and benches.
 * The main thread counts with tables handed to it and never imports this (measured in a heap
 * snapshot of an idle `mur serve`: 2.1 MiB of the main heap were these two strings).
 */
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';
import { NONE, cl100kCounter, hashOf, pack4, type BpeCounter, type Cl100kTables } from './bpe-count.ts';

const shared = <T>(make: (b: SharedArrayBuffer) => T, bytes: number): T => make(new SharedArrayBuffer(bytes));

/** Builds the tables from js-tiktoken's cl100k ranks (≈ 100–200 ms). Build them off the main thread. */
export function buildCl100kTables(): Cl100kTables {
  const tokens: Uint8Array[] = [];
  for (const line of cl100k_base.bpe_ranks.split('\n')) {
    if (!line) continue;
    const parts = line.split(' ');
    const offset = Number.parseInt(parts[1]!, 10);
    // Plain Uint8Arrays, not Buffers: the hot helpers (pack4, hashOf) then only ever see one map
    // (a Buffer here made them polymorphic for good, measured as a deopt and slower code).
    for (let i = 2; i < parts.length; i++) tokens[offset + i - 2] = new Uint8Array(Buffer.from(parts[i]!, 'base64'));
  }
  let bits = 1;
  while (1 << bits < tokens.length * 2.5) bits++;
  const shift = 32 - bits;
  const mask = (1 << bits) - 1;
  let total = 0;
  let maxLen = 0;
  for (const t of tokens) {
    total += t.length;
    maxLen = Math.max(maxLen, t.length);
  }
  if (tokens.length > 1 << 17 || maxLen > 255) throw new Error('rank table too large for its slot layout');
  const pair = shared((b) => new Int32Array(b), 65536 * 4).fill(NONE);
  const single = shared((b) => new Int32Array(b), 256 * 4).fill(NONE);
  const slots = shared((b) => new Int32Array(b), (2 << bits) * 4);
  for (let k = 1; k < slots.length; k += 2) slots[k] = -1;
  const offsets = shared((b) => new Int32Array(b), (1 << bits) * 4);
  const pool = shared((b) => new Uint8Array(b), total);
  let o = 0;
  tokens.forEach((t, r) => {
    if (t.length === 1) single[t[0]!] = r;
    else if (t.length === 2) pair[(t[0]! << 8) | t[1]!] = r;
    else {
      pool.set(t, o);
      const head = pack4(t, 0, t.length);
      let s = hashOf(t, 0, t.length, head) >>> shift;
      while (slots[2 * s + 1] !== -1) s = (s + 1) & mask;
      slots[2 * s] = head;
      slots[2 * s + 1] = (t.length << 17) | r;
      offsets[s] = o;
      o += t.length;
    }
  });
  for (let b = 0; b < 256; b++) if (single[b] === NONE) throw new Error(`cl100k_base has no rank for byte ${b}`);
  return { pair, single, pool, slots, offsets, maxLen, bits };
}

/** Builds the tables and a counter over them (≈ 100–200 ms). Build it off the main thread. */
export function buildCl100kCounter(): BpeCounter {
  return cl100kCounter(buildCl100kTables());
}
