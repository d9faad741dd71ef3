import { copyFileSync, mkdtempSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ComponentInstance, ComponentLoadError, IntegrityError, loadComponent, sha256Hex } from '../../runtime/host/index.ts';
import { readFileSync } from 'node:fs';
import { fixture } from '../fixtures/build.ts';
import { capMemory } from '../../runtime/host/memory-cap.ts';
import { fileIdentity } from '../../runtime/host/transpile-cache.ts';

describe('component loading', () => {
  it('transpiles once and serves the second load from the on-disk cache', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'jco-cache-'));
    const wasm = await fixture('echo-tool');
    const first = await loadComponent(wasm, { cacheDir });
    const second = await loadComponent(wasm, { cacheDir });
    expect(first.transpiled).toBe(true);
    expect(second.transpiled).toBe(false);
    expect(second.dir).toBe(first.dir);
    expect(first.dir).toContain(first.sha256);
    expect(first.exports).toContain('run');
  });

  it('serves a component from a seed cache (MURMUR_COMPONENT_CACHE_SEED) without transpiling, and fills the writable cache only for what the seed lacks', async () => {
    const seed = mkdtempSync(join(tmpdir(), 'jco-seed-'));
    const writable = mkdtempSync(join(tmpdir(), 'jco-writable-'));
    const echo = await fixture('echo-tool');
    const seeded = await loadComponent(echo, { cacheDir: seed }); // how an image build fills its seed
    const saved = { seed: process.env.MURMUR_COMPONENT_CACHE_SEED, cache: process.env.MURMUR_COMPONENT_CACHE };
    process.env.MURMUR_COMPONENT_CACHE_SEED = `/nonexistent-seed:${seed}`;
    process.env.MURMUR_COMPONENT_CACHE = writable;
    try {
      const fromSeed = await loadComponent(echo);
      expect(fromSeed.transpiled).toBe(false);
      expect(fromSeed.dir).toBe(seeded.dir);
      expect(readdirSync(writable)).toEqual([]);
      // Bytes the seed has no entry for go to the writable cache, as without a seed.
      const other = await loadComponent(await fixture('sandbox-probe'));
      expect(other.dir.startsWith(writable)).toBe(true);
    } finally {
      for (const [k, v] of [
        ['MURMUR_COMPONENT_CACHE_SEED', saved.seed],
        ['MURMUR_COMPONENT_CACHE', saved.cache],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('verifies a given SHA-256 and refuses a mismatch', async () => {
    const wasm = await fixture('echo-tool');
    const sha = sha256Hex(readFileSync(wasm));
    await expect(loadComponent(wasm, { sha256: sha })).resolves.toMatchObject({ sha256: sha });
    const err = await loadComponent(wasm, { sha256: '0'.repeat(64) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrityError);
    expect((err as IntegrityError).message).toMatch(/SHA-256 mismatch: expected 0{64}, file has [0-9a-f]{64}/);
  });

  it('a pinned load of a file unchanged since it was pinned is served from the cache; the same file changed since is refused, even at the same size with its mtime put back', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'jco-cache-'));
    const dir = mkdtempSync(join(tmpdir(), 'pinned-'));
    const file = join(dir, 'echo-tool.wasm');
    copyFileSync(await fixture('echo-tool'), file);
    const bytes = readFileSync(file);
    const sha = sha256Hex(bytes);
    const first = await loadComponent(file, { sha256: sha, cacheDir });
    const identity = fileIdentity(file);
    const again = await loadComponent(file, { sha256: sha, cacheDir, unchangedSince: identity });
    expect(again).toMatchObject({ sha256: sha, dir: first.dir, transpiled: false });
    // Same size, its last byte flipped, its mtime put back: only the ctime tells.
    const changed = Buffer.from(bytes);
    changed[changed.length - 1] = changed[changed.length - 1]! ^ 0xff;
    writeFileSync(file, changed);
    const st = statSync(file);
    utimesSync(file, new Date(Number(identity.mtimeNs / 1_000_000n)), new Date(Number(identity.mtimeNs / 1_000_000n)));
    expect(statSync(file).size).toBe(st.size);
    const err = await loadComponent(file, { sha256: sha, cacheDir, unchangedSince: identity }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrityError);
    expect((err as Error).message).toContain(`expected ${sha}`);
  });

  it('a pinned load without a cached transpile refuses a file changed after staging before transpiling it', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'jco-cache-'));
    const dir = mkdtempSync(join(tmpdir(), 'pinned-'));
    const file = join(dir, 'echo-tool.wasm');
    const sha = sha256Hex(readFileSync(await fixture('echo-tool')));
    copyFileSync(await fixture('sandbox-probe'), file);
    const err = await loadComponent(file, { sha256: sha, cacheDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrityError);
    expect((err as Error).message).toContain(`expected ${sha}`);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it('transpiles in a process of its own: this one keeps serving (an HTTP round trip completes while a 12 MB component transpiles)', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'jco-child-'));
    const server = createServer((_q, r) => r.end('pong'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const events: string[] = [];
    try {
      const loading = loadComponent(await fixture('sandbox-probe'), { cacheDir }).then((c) => {
        events.push('transpiled');
        return c;
      });
      const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      events.push(`answered ${await res.text()}`);
      expect((await loading).transpiled).toBe(true);
      expect(events).toEqual(['answered pong', 'transpiled']);
    } finally {
      server.close();
    }
  });

  it('refuses a file that is not a component with a clear error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bad-'));
    writeFileSync(join(dir, 'junk.wasm'), 'not wasm at all');
    const err = await loadComponent(join(dir, 'junk.wasm')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComponentLoadError);
    expect((err as Error).message).toMatch(/junk: is not a loadable WebAssembly component/);
  });

  it('refuses to instantiate a component whose imports the host does not provide, naming them', async () => {
    const c = await loadComponent(await fixture('echo-tool'));
    expect(() => new ComponentInstance(c, { grants: { env: {}, networkAllow: [] }, imports: {}, deadlineMs: 1000, memoryBytes: 1 << 28 })).toThrow(
      /echo-tool: imports murmur:task\/task, which the runtime does not provide/,
    );
  });

  it('a copy of the same bytes under another name shares the cache entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'copy-'));
    const src = await fixture('echo-tool');
    copyFileSync(src, join(dir, 'renamed.wasm'));
    const a = await loadComponent(src);
    const b = await loadComponent(join(dir, 'renamed.wasm'));
    expect(b.transpiled).toBe(false);
    expect(b.dir).toBe(a.dir);
    expect(b.name).toBe('renamed');
  });
});

describe('memory cap patch', () => {
  it('rewrites the memory maximum and leaves other sections intact', () => {
    // (module (memory 1)) and (module (memory 1 100))
    const noMax = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 3, 1, 0, 1]);
    const capped = capMemory(noMax, 10 * 65536);
    const m = new WebAssembly.Memory({ initial: 1 });
    expect(m).toBeTruthy();
    const inst = new WebAssembly.Instance(
      new WebAssembly.Module(Uint8Array.from([...capped.subarray(0, 8), ...capped.subarray(8), 7, 10, 1, 6, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 2, 0])),
    );
    const mem = inst.exports.memory as WebAssembly.Memory;
    expect(mem.grow(9)).toBe(1);
    expect(() => mem.grow(1)).toThrow();
    const withMax = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 4, 1, 1, 1, 100]);
    expect([...capMemory(withMax, 5 * 65536).subarray(8)]).toEqual([5, 4, 1, 1, 1, 5]);
    expect(() => capMemory(Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 3, 1, 0, 20]), 65536 * 2)).toThrow(/needs 20 pages/);
  });
});
