/**
 * Where js-tiktoken's cl100k rank table is loaded: only where the tables are built (the token
 * counter's worker), never on the main thread, which counts over tables handed to it. The ranks
 * module is 1 MiB of source exporting a 1 MiB string: 2.1 MiB of an idle `mur serve`'s main heap
 * (heap snapshot) while tokens.ts reached it through bpe-count.ts.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { esbuildMetafile } from '../cli/start-packages.ts';

const at = (p: string): string => fileURLToPath(new URL(`../../runtime/inference/${p}`, import.meta.url));

/** Every module the entry's imports reach in one bundle (its own files, and the packages it imports). */
async function reached(entry: string): Promise<string[]> {
  const m = await esbuildMetafile([at(entry)]);
  const out = Object.values(m.outputs)[0]!;
  return [...Object.keys(m.inputs), ...out.imports.map((i) => i.path)];
}

describe('the cl100k rank table', () => {
  it("is imported by the counter's worker, which builds the tables", async () => {
    expect((await reached('token-worker.ts')).filter((m) => m.includes('js-tiktoken/ranks/cl100k_base'))).not.toEqual([]);
  });

  it('is never imported by the main thread’s counter (runtime/inference/tokens.ts)', async () => {
    const mods = await reached('tokens.ts');
    expect(mods.some((m) => m.endsWith('bpe-count.ts'))).toBe(true);
    expect(mods.filter((m) => m.includes('js-tiktoken') || m.endsWith('bpe-tables.ts'))).toEqual([]);
  });
});
