/**
 * Token counting throughput on high-entropy text: the runtime's counter against the three libraries
 * it could have used, every arm fed the same chunks (chunk.ts, which defines the runtime's count).
 *
 * Arms, alternating round by round on the same inputs, all on this thread (the runtime counts in a
 * worker; the `runtime (worker)` arm adds that round trip, the chunking and the chunk digests):
 * - js-tiktoken `encode` (what the runtime used before)
 * - tiktoken (the WebAssembly build) `encode_ordinary`
 * - gpt-tokenizer `encode`
 * - bpe-count.ts (count-only BPE over js-tiktoken's ranks, pieces from pretokenize.ts: what the runtime uses)
 * - the pre-tokenizer alone, two ways (pieces only, no merge: the ceiling of any counter built on it):
 *   `split: regex` (js-tiktoken's pattern through `RegExp.exec`, what the counter used before) and
 *   `split: scanner` (pretokenize.ts); their "count" is the number of pieces, checked equal.
 * Inputs, new each round: 256 KiB of base64 and 256 KiB (UTF-8) of random code points. Throughput is UTF-8 MiB/s.
 * Each arm's count is checked against js-tiktoken's; a mismatch is printed.
 */
import { randomBytes } from 'node:crypto';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';
import { get_encoding } from 'tiktoken';
import { buildCl100kCounter } from '../runtime/inference/bpe-tables.ts';
import { chunkText } from '../runtime/inference/chunk.ts';
import { CL100K_PATTERN, cl100kPieceEnd } from '../runtime/inference/pretokenize.ts';
import { TokenCounter } from '../runtime/inference/tokens.ts';

function spread(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const med = s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return `min ${s[0]!.toFixed(2)} / median ${med.toFixed(2)} / max ${s[s.length - 1]!.toFixed(2)}`;
}

function randomCodePoints(utf8Bytes: number): string {
  let s = '';
  while (Buffer.byteLength(s) < utf8Bytes) {
    const cp = Math.floor(Math.random() * 0x30000);
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    s += String.fromCodePoint(cp);
  }
  return s;
}

export async function benchTokens(rounds = Number(process.env.BENCH_ROUNDS ?? 3)): Promise<string> {
  const built: Record<string, number> = {};
  const time = <T>(name: string, f: () => T): T => {
    const t = performance.now();
    const v = f();
    built[name] = performance.now() - t;
    return v;
  };
  const js = time('js-tiktoken', () => new Tiktoken(cl100k_base));
  const wasm = time('tiktoken (wasm)', () => get_encoding('cl100k_base'));
  const gpt = await (async () => {
    const t = performance.now();
    const m = await import('gpt-tokenizer/encoding/cl100k_base');
    m.encode('warm');
    built['gpt-tokenizer'] = performance.now() - t;
    return m;
  })();
  const own = time('bpe-count (runtime)', () => buildCl100kCounter());
  const worker = new TokenCounter({ memoEntries: 0 }); // no chunk memo: every round counts afresh
  const t = performance.now();
  await worker.ready();
  built['runtime (worker)'] = performance.now() - t;

  const arms: Record<string, (c: string) => number | Promise<number>> = {
    'js-tiktoken': (c) => js.encode(c, [], []).length,
    'tiktoken (wasm)': (c) => wasm.encode_ordinary(c).length,
    'gpt-tokenizer': (c) => gpt.encode(c, { disallowedSpecial: new Set() }).length,
    'bpe-count (runtime)': (c) => own.count(c),
    'split: regex': (c) => {
      let n = 0;
      split.lastIndex = 0;
      while (split.exec(c) !== null) n++;
      return n;
    },
    'split: scanner': (c) => {
      let n = 0;
      for (let i = 0; i < c.length; n++) i = cl100kPieceEnd(c, i, c.length);
      return n;
    },
  };
  const split = new RegExp(CL100K_PATTERN, 'gu');
  // Fresh text every round (the same for every arm in that round): no memo hit across rounds.
  const inputs: Record<string, () => string> = {
    base64: () => randomBytes(192 * 1024).toString('base64'),
    'random code points': () => randomCodePoints(256 * 1024),
  };
  const lines: string[] = ['tokens: counting throughput on high-entropy text, UTF-8 MiB/s (higher is better), arms alternating each round'];
  for (const [name, make] of Object.entries(inputs)) {
    const rates: Record<string, number[]> = {};
    const counts: Record<string, number> = {};
    let mib = 0;
    for (let r = 0; r < rounds; r++) {
      const text = make();
      mib = Buffer.byteLength(text) / 1048576;
      const chunks = chunkText(text);
      for (const [arm, f] of Object.entries(arms)) {
        const a = performance.now();
        let n = 0;
        for (const c of chunks) n += (await f(c)) as number;
        (rates[arm] ??= []).push(mib / ((performance.now() - a) / 1000));
        counts[arm] = n;
      }
      const a = performance.now();
      counts['runtime (worker)'] = await worker.count(text);
      (rates['runtime (worker)'] ??= []).push(mib / ((performance.now() - a) / 1000));
    }
    lines.push(`  ${name} (${mib.toFixed(2)} MiB, ${counts['js-tiktoken']} tokens by js-tiktoken)`);
    for (const [arm, xs] of Object.entries(rates)) {
      const ref = arm.startsWith('split:') ? 'split: regex' : 'js-tiktoken';
      const same =
        counts[arm] === counts[ref] /* last round */
          ? ref === 'js-tiktoken'
            ? 'count identical'
            : `pieces identical (${counts[arm]})`
          : `COUNT DIFFERS: ${counts[arm]}`;
      // Paired ratio against the arm it replaces: js-tiktoken for counters, the regex for the split.
      const ratio = xs.map((x, i) => x / rates[ref]![i]!);
      lines.push(`    ${arm.padEnd(20)} ${spread(xs)} MiB/s; ×${ref} ${spread(ratio)}; ${same}`);
    }
  }
  lines.push(
    `  encoder build (first use, ms; the worker's includes its JIT warm-up): ${Object.entries(built)
      .map(([k, v]) => `${k} ${v.toFixed(0)}`)
      .join(', ')}`,
  );
  await worker.close();
  wasm.free();
  return lines.join('\n');
}
