/**
 * Exact, unchunked js-tiktoken count on the calling thread. Quadratic on pathological input and
 * ≈ 0.5 s to build: for tests and benches comparing against the library, never the runtime. Its
 * own module so the runtime's main thread never loads the rank table (≈ 2 MiB of heap, ≈ 5 MiB
 * RSS measured): only the counting worker holds one.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';

let jsEncoder: Tiktoken | undefined;
export function countTokensUnchunked(text: string): number {
  jsEncoder ??= new Tiktoken(cl100k_base);
  return jsEncoder.encode(text, [], []).length;
}
