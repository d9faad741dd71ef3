/**
 * The Dockerfiles copy into their build stage only the scripts the build runs (layer caching):
 * every local module those scripts import must be among them, or `docker build` stops with
 * ERR_MODULE_NOT_FOUND (it did: scripts/image-files.ts gained imports the COPY lines lacked). Read
 * from the files themselves, so it holds before any image is built.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

/** The scripts a Dockerfile's `COPY scripts/… ./scripts/` lines bring in. */
function copiedScripts(dockerfile: string): Set<string> {
  const out = new Set<string>();
  for (const line of readFileSync(join(root, dockerfile), 'utf8').split('\n')) {
    const m = /^COPY\s+(.+)\s+\.\/scripts\/\s*$/.exec(line);
    if (m) for (const f of m[1]!.split(/\s+/)) out.add(normalize(f));
  }
  return out;
}

/** `file` and every local module it imports, transitively (relative specifiers only). */
function localClosure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const src = readFileSync(join(root, file), 'utf8');
  for (const m of src.matchAll(/^\s*import\s[^'"]*['"](\.{1,2}\/[^'"]+)['"]/gm)) {
    const target = normalize(join(dirname(file), m[1]!));
    if (target.startsWith('scripts/')) localClosure(target, seen);
  }
  return seen;
}

describe('the images build context', () => {
  for (const dockerfile of ['Dockerfile', 'operator/Dockerfile'])
    it(`${dockerfile} copies every script module the build imports`, () => {
      const copied = copiedScripts(dockerfile);
      expect(copied.size).toBeGreaterThan(0);
      const needed = new Set<string>();
      for (const f of copied) for (const g of localClosure(f)) needed.add(g);
      expect([...needed].filter((f) => !copied.has(f)).sort()).toEqual([]);
    });
});
