/**
 * Fixed token-counting inputs (seeded, so every run builds the same strings) and the counts the
 * js-tiktoken counter gave for them before the count-only encoder replaced it (recorded once in
 * token-counts.json): the new counter must give exactly these.
 */
import { createHash } from 'node:crypto';

/** Deterministic pseudo-random bytes: SHA-256 in counter mode over a seed. */
function bytes(seed: string, n: number): Buffer {
  const out = Buffer.alloc(n);
  for (let off = 0, i = 0; off < n; i++) off += createHash('sha256').update(`${seed}:${i}`).digest().copy(out, off);
  return out;
}

function randomCodePoints(seed: string, n: number): string {
  const b = bytes(seed, n * 4);
  let s = '';
  for (let i = 0; i < n; i++) {
    const cp = b.readUInt32LE(i * 4) % 0x30000;
    s += cp >= 0xd800 && cp <= 0xdfff ? 'x' : String.fromCodePoint(cp);
  }
  return s;
}

const prose = `The runtime counts tokens host-side, over the full conversation. It isn't the provider's count —
that one arrives later, as reported usage — but it's the number every budget decision runs on.

    function add(a, b) { return a + b; }   // code, with   irregular    spacing
{"role":"user","content":[{"type":"text","text":"héllo wörld, 日本語のテキスト 😀 1234567 3.14159"}]}
Don't, won't, they'll, we've, I'm, she'd — contractions.\r\n\tTabs\tand\r\nCRLF lines <|endoftext|>.\n\n\n  \n`;

export function tokenInputs(): Record<string, string> {
  return {
    prose: prose.repeat(200),
    base64_256k: bytes('b64', 192 * 1024).toString('base64'),
    hex_64k: bytes('hex', 32 * 1024).toString('hex'),
    random_code_points_64k: randomCodePoints('cp', 64 * 1024),
    letter_run_1m: 'a'.repeat(1024 * 1024),
    spaces_200k: ' '.repeat(200_000),
    bar_200k: '='.repeat(200_000),
    cjk_150k: '日本語'.repeat(50_000),
    newlines_100k: '\n'.repeat(100_000),
    mixed_ws_210k: ' \n\t'.repeat(70_000),
    dash_underscore_200k: '_-'.repeat(100_000),
    digits_100k: '1234567890'.repeat(10_000),
    emoji_40k: '😀🎉'.repeat(10_000),
    json_tools: JSON.stringify(
      Array.from({ length: 50 }, (_, i) => ({
        name: `tool_${i}`,
        description: `Does thing number ${i} well.`,
        input_schema: { type: 'object', properties: { path: { type: 'string' } } },
      })),
    ),
  };
}
