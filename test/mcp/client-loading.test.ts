/**
 * What `mur serve` loads at start: the MCP client (the MCP SDK with zod and ajv, ≈ 0.5 MB of
 * bundled source and ≈ 3 MiB of an idle serving process's main heap, by a heap snapshot) only when
 * the capsule names MCP servers, not in every serving process. Read from esbuild's metafile of
 * serve-staged.ts (what serve.ts loads once staged) split at its dynamic imports, as the image's bundle is (start-packages.ts).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startPackages } from '../cli/start-packages.ts';

const SERVE = fileURLToPath(new URL('../../runtime/cli/serve-staged.ts', import.meta.url));

describe('the MCP client at start', () => {
  it('is not loaded by mur serve at start; a capsule that names MCP servers loads it', async () => {
    const { atStart, later } = await startPackages(SERVE);
    expect([...atStart].filter((p) => p.startsWith('@modelcontextprotocol/'))).toEqual([]);
    expect(later.has('@modelcontextprotocol/sdk/client/index.js')).toBe(true);
  });
});
