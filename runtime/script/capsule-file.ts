/**
 * Which file in a script capsule's folder is its capsule component when it is not an artifact:
 * `capsule.wasm`, or the only root `*.wasm` (the reference runtime's convention). Apart from
 * capsule.ts, which loads and checks it, so `mur run` and `mur serve` can name it for the
 * transpile they do before loading anything else (cli/transpile-first.ts).
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

export const CAPSULE_FILE = 'capsule.wasm';

/** The root `*.wasm` files of `dir`, sorted (none when it cannot be read). */
export function rootWasm(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.wasm') && statSync(path.join(dir, f)).isFile())
      .sort();
  } catch {
    return [];
  }
}

/** The capsule component's file name among `wasmFiles` (rootWasm), if one is chosen. */
export function capsuleFileChoice(wasmFiles: readonly string[]): string | undefined {
  return wasmFiles.includes(CAPSULE_FILE) ? CAPSULE_FILE : wasmFiles.length === 1 ? wasmFiles[0] : undefined;
}
