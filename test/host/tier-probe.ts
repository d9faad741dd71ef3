/**
 * Run by test/host/transpile-ahead.test.ts in a node process of its own, with V8's
 * --trace-wasm-compilation-times: a transpile ahead of the component given (argv[2]) into a fresh
 * cache (argv[3]) between the lines `AHEAD-START` and `AHEAD-DONE`, then a small hot loop compiled and called until the
 * test has seen what it waits for and ends this process.
 */
import { transpileAhead } from '../../runtime/host/transpile-ahead.ts';

process.stdout.write('AHEAD-START\n');
const r = await transpileAhead([{ name: 'probe', path: process.argv[2]! }], { cacheDir: process.argv[3]! });
// V8's trace lines and this one go to the same pipe, synchronously, so they stay in order.
process.stdout.write(`AHEAD-DONE ${JSON.stringify(r)}\n`);
// (func (export "f") (param $n i32) (result i32): an LCG stepped $n times.
const HOT = new Uint8Array([
  0x0, 0x61, 0x73, 0x6d, 0x1, 0x0, 0x0, 0x0, 0x1, 0x6, 0x1, 0x60, 0x1, 0x7f, 0x1, 0x7f, 0x3, 0x2, 0x1, 0x0, 0x7, 0x5, 0x1, 0x1, 0x66, 0x0, 0x0, 0xa, 0x22, 0x1,
  0x20, 0x1, 0x1, 0x7f, 0x3, 0x40, 0x20, 0x1, 0x41, 0xcd, 0x9b, 0x4, 0x6c, 0x41, 0xb9, 0xe0, 0x0, 0x6a, 0x21, 0x1, 0x20, 0x0, 0x41, 0x1, 0x6b, 0x22, 0x0, 0xd,
  0x0, 0xb, 0x20, 0x1, 0xb,
]);
const { f } = new WebAssembly.Instance(new WebAssembly.Module(HOT)).exports as { f: (n: number) => number };
const spin = (): void => {
  f(1_000_000);
  setImmediate(spin);
};
spin();
