import { describe, expect, it } from 'vitest';
import { chunkText, countTokens, countTokensUnchunked, TokenCounter, type ChunkStats } from '../../runtime/inference/tokens.ts';

const prose = `The runtime counts tokens host-side, over the full conversation. It isn't the provider's count —
that one arrives later, as reported usage — but it's the number every budget decision runs on.

    function add(a, b) { return a + b; }   // code, with   irregular    spacing
{"role":"user","content":[{"type":"text","text":"héllo wörld, 日本語のテキスト 😀 1234567 3.14159"}]}
Don't, won't, they'll, we've, I'm, she'd — contractions.\r\n\tTabs\tand\r\nCRLF lines.\n\n\n  \n`;

describe('token counting (js-tiktoken cl100k_base, linear)', () => {
  it('counts normal text exactly like unchunked encoding, even with tiny chunks', () => {
    const text = prose.repeat(20);
    const expected = countTokensUnchunked(text);
    expect(countTokens(text)).toBe(expected);
    for (const maxChunk of [8, 16, 64, 300]) {
      const stats: ChunkStats = { inexactCuts: 0 };
      const chunks = chunkText(text, { maxChunk }, stats);
      expect(chunks.join('')).toBe(text);
      if (stats.inexactCuts === 0) expect(new TokenCounter({ maxChunk, memoChars: 0 }).count(text)).toBe(expected);
    }
    expect(new TokenCounter({ maxChunk: 64 }).count(text)).toBe(expected);
  });

  it('safe-boundary cuts never change the count (randomised)', () => {
    const alphabet = ['a', 'Zq', ' ', '  ', '\n', '\r\n', '\t', '7', '42', '.', ',', "'s", "'", '(', 'é', '日本', '😀', '-', '\u00a0', 'the ', '\n\n', ' \n', 'x1'];
    let seed = 12345;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let exactSamples = 0;
    for (let k = 0; k < 1500; k++) {
      let s = '';
      const len = Math.floor(rnd() * 80);
      for (let j = 0; j < len; j++) s += alphabet[Math.floor(rnd() * alphabet.length)];
      const stats: ChunkStats = { inexactCuts: 0 };
      const chunks = chunkText(s, { maxChunk: 12 }, stats);
      expect(chunks.join('')).toBe(s);
      if (stats.inexactCuts > 0) continue;
      exactSamples++;
      const counter = new TokenCounter({ maxChunk: 12, memoChars: 0 });
      expect(counter.count(s), JSON.stringify(s)).toBe(countTokensUnchunked(s));
    }
    expect(exactSamples).toBeGreaterThan(1000);
  });

  it('1 MiB of "a" (no break point: quadratic in js-tiktoken) completes', () => {
    const text = 'a'.repeat(1024 * 1024);
    const chunks = chunkText(text);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(64);
    const n = new TokenCounter().count(text);
    // cl100k merges "a"s into multi-character tokens: far fewer tokens than characters.
    expect(n).toBeGreaterThan(1024 * 1024 / 64);
    expect(n).toBeLessThan(1024 * 1024);
  });

  it('other unbroken runs (random letters, whitespace, punctuation bars, CJK) complete and never exceed the run cap', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let letters = '';
    for (let i = 0; i < 100_000; i++) letters += String.fromCharCode(97 + Math.floor(rnd() * 26));
    const texts = [letters, ' '.repeat(200_000), '='.repeat(200_000), '日本語'.repeat(50_000), '\n'.repeat(100_000), ' \n\t'.repeat(70_000), '_-'.repeat(100_000)];
    const counter = new TokenCounter();
    for (const t of texts) {
      const n = counter.count(t);
      expect(n).toBeGreaterThan(0);
      const chunks = chunkText(t);
      expect(chunks.join('')).toBe(t);
      expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(64);
    }
  });

  it('countAsync yields to the event loop and gives the same count', async () => {
    const text = prose.repeat(2000);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const counter = new TokenCounter({ memoChars: 0 });
    const n = await counter.countAsync(text, { sliceMs: 2 });
    clearInterval(timer);
    expect(n).toBe(new TokenCounter({ memoChars: 0 }).count(text));
    expect(ticks).toBeGreaterThan(0);
  });

  it('special-token text is counted as plain text, not thrown on', () => {
    expect(countTokens('before <|endoftext|> after')).toBe(countTokensUnchunked('before <|endoftext|> after'));
    expect(countTokens('')).toBe(0);
  });

  it('countJson counts the JSON serialisation', () => {
    const v = { role: 'user', content: [{ type: 'text', text: 'hi there' }] };
    expect(new TokenCounter().countJson(v)).toBe(countTokensUnchunked(JSON.stringify(v)));
  });
});
