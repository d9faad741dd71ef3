import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { buildCl100kCounter } from './runtime/inference/bpe-count.ts';
import { chunkText, cl100kEncoder } from './runtime/inference/tokens.ts';
const require = createRequire('/tmp/tokbench/x.js');
const tk = require('tiktoken'); const wasm = tk.get_encoding('cl100k_base');
let t = performance.now(); const own = buildCl100kCounter(); console.log('own build', performance.now()-t);
t = performance.now(); const js = cl100kEncoder(); console.log('js build', performance.now()-t);
const b64 = randomBytes(768*1024).toString('base64');
let rc = ''; while (rc.length < 1<<19) { let cp = Math.floor(Math.random()*0x2ffff); if (cp>=0xd800&&cp<=0xdfff) continue; rc += String.fromCodePoint(cp); }
const prose = 'The quick brown fox <|endoftext|> jumps over the lazy dog, 12345 times!\n\n  '.repeat(9000);
for (const [name, s] of [['b64', b64], ['randcp', rc], ['prose', prose]] as const) {
  const chunks = chunkText(s);
  for (let r=0;r<2;r++) for (const [en, f] of [['js', (c: string) => js.encode(c, [], []).length], ['wasm', (c: string) => wasm.encode_ordinary(c).length], ['own', (c: string) => own.count(c)]] as const) {
    const a = performance.now(); let n=0; for (const c of chunks) n+=f(c); const d = performance.now()-a;
    console.log(name, en, n, (s.length/1048576/(d/1000)).toFixed(2)+'MiB/s');
  }
}
