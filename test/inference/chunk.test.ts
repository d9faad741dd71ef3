import { describe, expect, it } from 'vitest';
import { chunkText, type ChunkStats } from '../../runtime/inference/chunk.ts';
import { chunkText as referenceChunkText } from './chunk-reference.ts';

const PARTS = [
  'a',
  'Zq',
  'é',
  '日本',
  '𝐀',
  '7',
  '42',
  '٣',
  '.',
  '==',
  '-_',
  '😀',
  '\u0301',
  '\ud800',
  '\udc00',
  ' ',
  '\t',
  '\n',
  '\r\n',
  '\u00a0',
  '\u3000',
  "'s",
];

function seeded(seed: number): string {
  let s = seed >>> 0;
  const rnd = (n: number): number => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8) % n;
  let out = '';
  for (let k = 0, n = 1 + rnd(40); k < n; k++) {
    const p = PARTS[rnd(PARTS.length)]!;
    // Runs long enough to be cut: of one part, or of several parts of one run class.
    out += rnd(4) === 0 ? p.repeat(1 + rnd(150)) : p;
  }
  return out;
}

describe('chunker (one pass over char codes)', () => {
  it('cuts seeded text exactly where the regex-scanning chunker cut it, at every chunk and run size', () => {
    for (let seed = 1; seed <= 1500; seed++) {
      const t = seeded(seed);
      for (const opts of [{}, { maxChunk: 16, maxRun: 8 }, { maxChunk: 7, maxRun: 3 }, { maxChunk: 200, maxRun: 64 }]) {
        const a: ChunkStats = { inexactCuts: 0 };
        const b: ChunkStats = { inexactCuts: 0 };
        const got = chunkText(t, opts, a);
        const want = referenceChunkText(t, opts, b);
        if (got.length !== want.length || got.some((c, i) => c !== want[i]) || a.inexactCuts !== b.inexactCuts) {
          expect({ seed, opts, chunks: got, inexact: a.inexactCuts }).toEqual({ seed, opts, chunks: want, inexact: b.inexactCuts });
        }
      }
    }
  });
});
