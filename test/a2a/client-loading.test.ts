/**
 * What `mur serve` loads at start: the A2A SDK's client only with the first delegation or send
 * (a dynamic import), not with every serving process — its bundle is ≈ 0.5 MiB of source on the
 * main heap (a heap snapshot of an idle `mur serve`). Read from esbuild's metafile of serve.ts split
 * at its dynamic imports, as the image's bundle is (scripts/image-files.ts): the static closure of
 * the entry is what a start evaluates.
 */
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
const SERVE = fileURLToPath(new URL('../../runtime/cli/serve.ts', import.meta.url));

/** The packages the entry imports statically, and those only a dynamic import reaches. */
async function packages(entry: string): Promise<{ atStart: Set<string>; later: Set<string> }> {
  const r = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    splitting: true,
    outdir: tmpdir(),
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  const outs = r.metafile.outputs;
  // The entry's own output (each module reached by a dynamic import is an entry point of a chunk too).
  const start = Object.keys(outs).find((o) => outs[o]!.entryPoint && entry.endsWith(outs[o]!.entryPoint!))!;
  const atStart = new Set<string>();
  const seen = new Set<string>();
  const walk = (o: string): void => {
    if (seen.has(o)) return;
    seen.add(o);
    for (const i of outs[o]!.imports) {
      if (i.kind !== 'import-statement') continue;
      if (i.external) atStart.add(i.path);
      else walk(i.path);
    }
  };
  walk(start);
  const later = new Set<string>();
  for (const [o, out] of Object.entries(outs)) if (!seen.has(o)) for (const i of out.imports) if (i.external && !atStart.has(i.path)) later.add(i.path);
  return { atStart, later };
}

describe('the A2A client at start', () => {
  it('is not loaded by mur serve at start; the first delegation loads it', async () => {
    const { atStart, later } = await packages(SERVE);
    expect(atStart.has('@a2a-js/sdk/server')).toBe(true);
    expect(atStart.has('@a2a-js/sdk/client')).toBe(false);
    expect(later.has('@a2a-js/sdk/client')).toBe(true);
  });
});
