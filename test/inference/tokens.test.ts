import { afterAll, describe, expect, it } from 'vitest';
import { chunkText, countTokens, INLINE_MAX_CHARS, TokenCounter, tokenWorkerIdleMs, type ChunkStats } from '../../runtime/inference/tokens.ts';
import { countTokensUnchunked } from '../../runtime/inference/tokens-unchunked.ts';
import recorded from './token-counts.json' with { type: 'json' };
import { tokenInputs } from './token-inputs.ts';

const prose = `The runtime counts tokens host-side, over the full conversation. It isn't the provider's count —
that one arrives later, as reported usage — but it's the number every budget decision runs on.

    function add(a, b) { return a + b; }   // code, with   irregular    spacing
{"role":"user","content":[{"type":"text","text":"héllo wörld, 日本語のテキスト 😀 1234567 3.14159"}]}
Don't, won't, they'll, we've, I'm, she'd — contractions.\r\n\tTabs\tand\r\nCRLF lines.\n\n\n  \n`;

describe('token counting (cl100k_base, chunked, in a worker)', () => {
  const counter = new TokenCounter();
  afterAll(() => counter.close());

  it('counts exactly what the js-tiktoken counter counted on fixed inputs (base64, random code points, runs, prose)', async () => {
    const inputs = tokenInputs();
    const names = Object.keys(inputs);
    expect(names.sort()).toEqual(Object.keys(recorded).sort());
    const counts = await counter.countMany(names.map((k) => inputs[k]!));
    expect(Object.fromEntries(names.map((k, i) => [k, counts[i]]))).toEqual(recorded);
  });

  it('agrees with the library encoder on seeded random text of every kind (ASCII, 2-, 3- and 4-byte UTF-8, lone surrogates)', async () => {
    let seed = 7;
    const rnd = (n: number): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
    const ranges = [
      [0x20, 0x7f],
      [0x80, 0x800],
      [0x800, 0xd800],
      [0xd800, 0xe000],
      [0xe000, 0x10000],
      [0x10000, 0x30000],
    ] as const;
    const texts: string[] = [];
    for (let t = 0; t < 40; t++) {
      let s = '';
      for (let i = 0; i < 300; i++) {
        const [lo, hi] = ranges[rnd(ranges.length)]!;
        s += String.fromCodePoint(lo + rnd(hi - lo));
        if (rnd(5) === 0) s += ' ';
      }
      texts.push(s);
    }
    const counts = await counter.countMany(texts);
    expect(counts).toEqual(texts.map((s) => countTokensUnchunked(s)));
  });

  it('counts normal text exactly like unchunked encoding, even with tiny chunks', async () => {
    const text = prose.repeat(20);
    const expected = countTokensUnchunked(text);
    expect(await countTokens(text)).toBe(expected);
    for (const maxChunk of [8, 16, 64, 300]) {
      const stats: ChunkStats = { inexactCuts: 0 };
      const chunks = chunkText(text, { maxChunk }, stats);
      expect(chunks.join('')).toBe(text);
      if (stats.inexactCuts === 0) {
        const small = new TokenCounter({ maxChunk, memoEntries: 0 });
        expect(await small.count(text)).toBe(expected);
        await small.close();
      }
    }
  });

  it('safe-boundary cuts never change the count (randomised)', async () => {
    const alphabet = [
      'a',
      'Zq',
      ' ',
      '  ',
      '\n',
      '\r\n',
      '\t',
      '7',
      '42',
      '.',
      ',',
      "'s",
      "'",
      '(',
      'é',
      '日本',
      '😀',
      '-',
      '\u00a0',
      'the ',
      '\n\n',
      ' \n',
      'x1',
    ];
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const exact: string[] = [];
    for (let k = 0; k < 1500; k++) {
      let s = '';
      const len = Math.floor(rnd() * 80);
      for (let j = 0; j < len; j++) s += alphabet[Math.floor(rnd() * alphabet.length)];
      const stats: ChunkStats = { inexactCuts: 0 };
      const chunks = chunkText(s, { maxChunk: 12 }, stats);
      expect(chunks.join('')).toBe(s);
      if (stats.inexactCuts === 0) exact.push(s);
    }
    expect(exact.length).toBeGreaterThan(1000);
    const small = new TokenCounter({ maxChunk: 12, memoEntries: 0 });
    const got = await small.countMany(exact);
    await small.close();
    expect(got).toEqual(exact.map((s) => countTokensUnchunked(s)));
  });

  it('a 10 MiB run of one character counts without error (a run over ≈ 5.5 M overflowed the regex stack)', async () => {
    for (const ch of ['a', '=', ' ']) {
      const text = ch.repeat(10 * 1024 * 1024);
      const chunks = chunkText(text);
      expect(chunks.join('').length).toBe(text.length);
      expect(chunks.reduce((m, c) => Math.max(m, c.length), 0)).toBeLessThanOrEqual(64);
      const n = await counter.count(text);
      expect(n).toBeGreaterThanOrEqual(text.length / 64);
      expect(n).toBeLessThan(text.length);
    }
  });

  it('other unbroken runs (random letters, whitespace, punctuation bars, CJK) never exceed the run cap', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let letters = '';
    for (let i = 0; i < 100_000; i++) letters += String.fromCharCode(97 + Math.floor(rnd() * 26));
    for (const t of [
      letters,
      ' '.repeat(200_000),
      '='.repeat(200_000),
      '日本語'.repeat(50_000),
      '\n'.repeat(100_000),
      ' \n\t'.repeat(70_000),
      '_-'.repeat(100_000),
      '😀'.repeat(100_000),
    ]) {
      const chunks = chunkText(t);
      expect(chunks.join('')).toBe(t);
      expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(65);
    }
  });

  it('counting a large text leaves the event loop free (timers fire while the worker counts)', async () => {
    const text = tokenInputs().base64_256k!.repeat(4);
    let ticks = 0;
    let resolveTick!: () => void;
    const ticked = new Promise<void>((r) => (resolveTick = r));
    const timer = setInterval(() => {
      ticks++;
      resolveTick();
    }, 1);
    const counting = counter.count(text);
    let done = false;
    void counting.then(() => (done = true));
    await ticked;
    // A timer ran before the count finished: the count is not on this thread.
    expect(done).toBe(false);
    const n = await counting;
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    expect(n).toBeGreaterThan(recorded.base64_256k * 3);
  });

  it('special-token text is counted as plain text, not thrown on', async () => {
    expect(await countTokens('before <|endoftext|> after')).toBe(countTokensUnchunked('before <|endoftext|> after'));
    expect(await countTokens('')).toBe(0);
  });

  it('countJson counts the JSON serialisation', async () => {
    const v = { role: 'user', content: [{ type: 'text', text: 'hi there' }] };
    expect(await counter.countJson(v)).toBe(countTokensUnchunked(JSON.stringify(v)));
  });
});

describe('where counting runs: in place for small requests, in the worker for large ones', () => {
  it('once the worker has built the tables, a small request is counted in place, equal to the worker’s count of the same text', async () => {
    const c = new TokenCounter({ idleMs: 0 });
    try {
      await c.ready();
      expect(c.countsInline).toBe(true);
      const texts = [prose, 'x'.repeat(3000), '😀 héllo 日本語'.repeat(200)];
      const here = await c.countMany(texts);
      // The same texts with a filler past INLINE_MAX_CHARS: the whole request goes to the worker.
      const there = await c.countMany([...texts, 'y'.repeat(INLINE_MAX_CHARS + 1)]);
      expect(there.slice(0, texts.length)).toEqual(here);
      expect(here).toEqual(texts.map((t) => countTokensUnchunked(t)));
    } finally {
      await c.close();
    }
  });

  it('lets an idle worker go, and starts it again for a large text with the tables it already has (nothing rebuilt)', async () => {
    let stopped!: () => void;
    const stop = new Promise<void>((r) => (stopped = r));
    const c = new TokenCounter({ idleMs: 20, onIdleStop: () => stopped() });
    try {
      await c.ready();
      await stop;
      expect(c.workerRunning).toBe(false);
      expect(await c.count(prose)).toBe(countTokensUnchunked(prose)); // in place: no worker needed
      expect(c.workerRunning).toBe(false);
      const big = prose.repeat(Math.ceil((INLINE_MAX_CHARS * 2) / prose.length));
      expect(await c.count(big)).toBe(countTokensUnchunked(big));
      expect({ started: c.workersStarted, built: c.tablesBuilt }).toEqual({ started: 2, built: 1 });
    } finally {
      await c.close();
    }
  });

  it('closing the counter rejects a count still running in the worker, saying so', async () => {
    const c = new TokenCounter({ idleMs: 0 });
    const big = 'q'.repeat(4 * 1048576);
    // The outcome is awaited from the start: the rejection happens inside close().
    const outcome = expect(c.count(big)).rejects.toThrow(/token counting worker stopped: the counter was closed/);
    await c.close();
    await outcome;
  });

  it('refuses a MURMUR_TOKEN_WORKER_IDLE_MS that is not a number of milliseconds (E-RUN-032), naming the variable', () => {
    expect(tokenWorkerIdleMs({})).toBe(10_000);
    expect(tokenWorkerIdleMs({ MURMUR_TOKEN_WORKER_IDLE_MS: '0' })).toBe(0);
    expect(() => tokenWorkerIdleMs({ MURMUR_TOKEN_WORKER_IDLE_MS: 'soon' })).toThrow(/MURMUR_TOKEN_WORKER_IDLE_MS must be a number of milliseconds/);
    expect(() => tokenWorkerIdleMs({ MURMUR_TOKEN_WORKER_IDLE_MS: '-5' })).toThrow(expect.objectContaining({ code: 'E-RUN-032' }));
  });
});
