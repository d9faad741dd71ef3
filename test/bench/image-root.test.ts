/**
 * bench/image-root.ts unpacks the runtime image's `docker save` archive to run it as a process: the
 * layers in order, each layer's whiteouts removing what a lower layer put there. Tested on an
 * archive of the same format made here with the real `tar`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileCacheAsRoot, imageCommand, unpackImage } from '../../bench/image-root.ts';
import { tmp } from '../loop/kit.ts';

/** Entries named without a leading ./, as `docker save` writes them. */
function tarOf(dir: string, out: string): void {
  const r = spawnSync('tar', ['-cf', out, '-C', dir, ...readdirSync(dir)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
}

/** A docker-save archive: layer dirs given as {path: content} maps (content null = a whiteout). */
function archive(layers: Record<string, string>[], config: object): string {
  const work = tmp('img-arch-');
  const names: string[] = [];
  layers.forEach((files, i) => {
    const src = join(work, `src${i}`);
    mkdirSync(src, { recursive: true });
    for (const [p, content] of Object.entries(files)) {
      mkdirSync(join(src, p, '..'), { recursive: true });
      writeFileSync(join(src, p), content);
    }
    mkdirSync(join(work, 'out', `l${i}`), { recursive: true });
    tarOf(src, join(work, 'out', `l${i}`, 'layer.tar'));
    names.push(`l${i}/layer.tar`);
  });
  writeFileSync(join(work, 'out', 'cfg.json'), JSON.stringify({ config }));
  writeFileSync(join(work, 'out', 'manifest.json'), JSON.stringify([{ Config: 'cfg.json', Layers: names }]));
  const tar = join(work, 'image.tar');
  tarOf(join(work, 'out'), tar);
  return tar;
}

describe('unpacking the runtime image for the reference bench', () => {
  it('applies the layers in order, with their file and opaque-directory whiteouts', () => {
    const tar = archive(
      [
        { 'app/keep.txt': 'one', 'app/gone.txt': 'x', 'opt/cache/old.bin': 'old', 'etc/conf': 'v1' },
        { 'app/.wh.gone.txt': '', 'opt/cache/.wh..wh..opq': '', 'opt/cache/new.bin': 'new', 'etc/conf': 'v2' },
      ],
      { Env: ['A=1'], Entrypoint: ['node', '/app/x'] },
    );
    const root = tmp('img-root-');
    const { layers, config } = unpackImage(tar, root);
    expect(layers).toBe(2);
    expect(readFileSync(join(root, 'app/keep.txt'), 'utf8')).toBe('one');
    expect(existsSync(join(root, 'app/gone.txt'))).toBe(false);
    expect(existsSync(join(root, 'app/.wh.gone.txt'))).toBe(false);
    expect(existsSync(join(root, 'opt/cache/old.bin'))).toBe(false);
    expect(readFileSync(join(root, 'opt/cache/new.bin'), 'utf8')).toBe('new');
    expect(readFileSync(join(root, 'etc/conf'), 'utf8')).toBe('v2');
    expect(config).toEqual({ Env: ['A=1'], Entrypoint: ['node', '/app/x'] });
  });

  it('names the archive when it is not a docker save archive', () => {
    const dir = tmp('img-bad-');
    writeFileSync(join(dir, 'x'), 'x');
    const tar = join(dir, 'bad.tar');
    tarOf(dir, tar);
    expect(() => unpackImage(tar, tmp('img-root-'))).toThrow(/reading the image manifest failed/);
  });
});

describe('running the runtime image as a process', () => {
  it("a bench arm's node flags go after the ENTRYPOINT's own node flags (the later wins) and before its script", () => {
    const img = { root: '/tmp/root', entrypoint: ['node', '--max-semi-space-size=1', '/app/bin/mur'], env: {}, nodeVersion: '24' };
    const script = (flags?: string[]) => imageCommand(img, ['serve', '/tmp/c'], flags).args.at(-1)!;
    expect(script()).toMatch(/exec chroot '\/tmp\/root' 'node' '--max-semi-space-size=1' '\/app\/bin\/mur' 'serve' '\/tmp\/c'$/);
    expect(script(['--max-semi-space-size=4', '--trace-gc'])).toMatch(
      /exec chroot '\/tmp\/root' 'node' '--max-semi-space-size=1' '--max-semi-space-size=4' '--trace-gc' '\/app\/bin\/mur' 'serve' '\/tmp\/c'$/,
    );
  });
});

describe("the image's compile cache in the bench's copy", () => {
  // Node 20 (the suite's) has no NODE_COMPILE_CACHE, so the folder layout Node 22+ uses is made by
  // hand here; on the image's Node 24 a root process reads the linked folder's entries ("V8 code
  // cache … was accepted" for each module under NODE_DEBUG_NATIVE=COMPILE_CACHE).
  it("a bench's root process finds the compile cache the image made as the pod's user (65532) under its own folder name", () => {
    const cache = tmp('compile-cache-');
    mkdirSync(join(cache, 'v24.22.3-x64-964aae3f-65532'));
    writeFileSync(join(cache, 'v24.22.3-x64-964aae3f-65532', '1e178bb2'), 'code');
    mkdirSync(join(cache, 'v22.1.0-x64-00000000-1000'));
    expect(compileCacheAsRoot(cache)).toEqual(['v24.22.3-x64-964aae3f-0']);
    expect(readFileSync(join(cache, 'v24.22.3-x64-964aae3f-0', '1e178bb2'), 'utf8')).toBe('code');
    expect(existsSync(join(cache, 'v22.1.0-x64-00000000-0'))).toBe(false);
    // Linked once: a second call links nothing more; an image without the cache folder, nothing.
    expect(compileCacheAsRoot(cache)).toEqual([]);
    expect(compileCacheAsRoot(join(cache, 'absent'))).toEqual([]);
  });
});
