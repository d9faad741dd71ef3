/**
 * What an entry point evaluates at start, read from esbuild's metafile of the entry split at its
 * dynamic imports, as the image's bundle is (scripts/image-files.ts): the static closure of the
 * entry is what a start loads; a package reached only through a dynamic import is loaded when the
 * code that needs it runs.
 */
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';

const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');

/**
 * esbuild's metafile of `entries` bundled for Node with every package external, nothing written;
 * `split`: split at dynamic imports (each module a dynamic import reaches is a chunk's entry).
 */
export async function esbuildMetafile(entries: string[], o: { split?: boolean; cwd?: string } = {}): Promise<import('esbuild').Metafile> {
  const r = await esbuild.build({
    ...(o.cwd ? { absWorkingDir: o.cwd } : {}),
    entryPoints: entries,
    bundle: true,
    ...(o.split ? { splitting: true, outdir: tmpdir() } : {}),
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  return r.metafile;
}

/** The packages the entry imports statically, and those only a dynamic import reaches. */
export async function startPackages(entry: string): Promise<{ atStart: Set<string>; later: Set<string> }> {
  const outs = (await esbuildMetafile([entry], { split: true })).outputs;
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
