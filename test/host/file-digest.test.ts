/**
 * A component file is read and hashed once per start (runtime/host/file-digest.ts): the digest the
 * start's transpileAhead computed is what the load right after uses, while the file is the same
 * file (device, inode, size, mtime, ctime); a file changed in any of those is hashed again. Real
 * fixture components, a real transpile cache.
 */
import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileDigest, loadComponent, sha256Hex } from '../../runtime/host/index.ts';
import { componentFileHashes } from '../../runtime/host/file-digest.ts';
import { transpileAhead } from '../../runtime/host/transpile-ahead.ts';
import { fixture } from '../fixtures/build.ts';

/** A copy of fixture `name` in a folder of its own: a file no other test has hashed. */
async function copyOf(name: string): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'digest-')), `${name}.wasm`);
  copyFileSync(await fixture(name), file);
  return file;
}

/** How many component files `f` read and hashed. */
async function hashesDuring(f: () => Promise<unknown> | unknown): Promise<number> {
  const before = componentFileHashes();
  await f();
  return componentFileHashes() - before;
}

describe('the digest of a component file', () => {
  it('an unpinned component is hashed once per start: transpileAhead hashes it, its load does not again (cold and warm cache)', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'jco-digest-'));
    const cold = await copyOf('echo-tool');
    const start = async (file: string) => {
      await transpileAhead([{ name: 'echo-tool', path: file }], { cacheDir });
      return loadComponent(file, { cacheDir });
    };
    let loaded: Awaited<ReturnType<typeof start>> | undefined;
    expect(await hashesDuring(async () => (loaded = await start(cold)))).toBe(1);
    expect(loaded).toMatchObject({ sha256: sha256Hex(readFileSync(cold)), transpiled: false });
    // The next start (another file of the same bytes, the cache warm): hashed once, by transpileAhead.
    const warm = await copyOf('echo-tool');
    expect(await hashesDuring(async () => (loaded = await start(warm)))).toBe(1);
    expect(loaded).toMatchObject({ sha256: sha256Hex(readFileSync(warm)), transpiled: false });
    // A load pinned to other bytes is refused from the digest known for the file, as from its bytes.
    await expect(loadComponent(warm, { cacheDir, sha256: 'a'.repeat(64) })).rejects.toMatchObject({ code: 'E-HOST-002' });
  });

  it('a changed file (new mtime, size, inode, or only its ctime) is hashed again, and its new digest is the one used', async () => {
    const file = await copyOf('echo-tool');
    const original = readFileSync(file);
    const sha = sha256Hex(original);
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(sha))).toBe(1);
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(sha))).toBe(0);

    // New mtime, same bytes.
    utimesSync(file, new Date(2001, 0, 1), new Date(2001, 0, 1));
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(sha))).toBe(1);

    // New size: the same inode, a byte more.
    appendFileSync(file, Buffer.from([0]));
    const grown = sha256Hex(readFileSync(file));
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(grown))).toBe(1);

    // New inode: another file of the same bytes and mtime renamed over it.
    const when = new Date(2002, 0, 1);
    writeFileSync(file, original);
    utimesSync(file, when, when);
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(sha))).toBe(1);
    const twin = `${file}.new`;
    writeFileSync(twin, original);
    utimesSync(twin, when, when);
    renameSync(twin, file);
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(sha))).toBe(1);

    // Only the ctime: a byte flipped at the same size, the mtime put back to the nanosecond. (The
    // 12 MB hash since the rename outlasts a coarse clock tick, so the write's ctime is another.)
    const before = statSync(file, { bigint: true });
    const flipped = Buffer.from(original);
    flipped[0] = flipped[0]! ^ 0xff;
    writeFileSync(file, flipped);
    utimesSync(file, when, when);
    const after = statSync(file, { bigint: true });
    expect([after.ino, after.size, after.mtimeNs]).toEqual([before.ino, before.size, before.mtimeNs]);
    expect(await hashesDuring(() => expect(fileDigest(file)).toBe(sha256Hex(flipped)))).toBe(1);
  });
});
