/**
 * What `mur serve` loads at start: the A2A SDK's client only with the first delegation or send
 * (a dynamic import), not with every serving process — its bundle is ≈ 0.5 MiB of source on the
 * main heap (a heap snapshot of an idle `mur serve`). Read from esbuild's metafile of serve-staged.ts (what serve.ts loads once staged) split
 * at its dynamic imports, as the image's bundle is (scripts/image-files.ts): the static closure of
 * the entry is what a start evaluates.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startPackages } from '../cli/start-packages.ts';

const SERVE = fileURLToPath(new URL('../../runtime/cli/serve-staged.ts', import.meta.url));

describe('the A2A client at start', () => {
  it('is not loaded by mur serve at start; the first delegation loads it', async () => {
    const { atStart, later } = await startPackages(SERVE);
    expect(atStart.has('@a2a-js/sdk/server')).toBe(true);
    expect(atStart.has('@a2a-js/sdk/client')).toBe(false);
    expect(later.has('@a2a-js/sdk/client')).toBe(true);
  });
});
