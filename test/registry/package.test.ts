/**
 * mur pack / publish / install: a user's own component goes into a registry without TypeScript.
 * Real components (the crash-tool WAT fixture), real zip files, the real CLI entry point.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { mur } from '../cli/mur.ts';
import { publish } from '../../runtime/registry/registry.ts';
import { readLock } from '../../runtime/registry/lock.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { tmp } from './helpers.ts';

async function toolFolder(name: string, runtime = 'tool', extra = ''): Promise<string> {
  const dir = tmp(`art-${name}-`);
  writeFileSync(path.join(dir, 'murmur.yaml'), `name: ${name}\nversion: 1.0.0\nruntime: ${runtime}\ndescription: crashes on request\n${extra}`);
  writeFileSync(path.join(dir, `${name}.wasm`), readFileSync(await watFixture('crash-tool')));
  return dir;
}

describe('publish() refuses what is not a component', () => {
  it('a 23-byte text file is refused at publish, naming the file and what it is (E-PKG-001)', () => {
    const dir = tmp('art-text-');
    writeFileSync(path.join(dir, 'murmur.yaml'), 'name: text\nversion: 1.0.0\nruntime: tool\n');
    writeFileSync(path.join(dir, 'component.wasm'), 'this is not a component');
    expect(readFileSync(path.join(dir, 'component.wasm')).length).toBe(23);
    const reg = tmp('reg-');
    let err: { code?: string; message?: string } = {};
    try {
      publish(reg, dir);
    } catch (e) {
      err = e as typeof err;
    }
    expect(err.code).toBe('E-PKG-001');
    expect(err.message).toMatch(/component\.wasm is not WebAssembly \(23 bytes, starting "this is not a co"\)/);
    expect(existsSync(path.join(reg, 'text'))).toBe(false);
  });
});

describe('mur pack', () => {
  it('packs an artifact folder into <name>-<version>.mur.zip holding murmur.yaml and the component, the same bytes every time', async () => {
    const dir = await toolFolder('crashy');
    const out = tmp('out-');
    const a = await mur(['pack', dir, '--output', path.join(out, 'a.mur.zip')]);
    const b = await mur(['pack', dir, '--output', path.join(out, 'b.mur.zip')]);
    expect(a.code, a.err).toBe(0);
    expect(a.out).toMatch(/packed crashy 1\.0\.0 \(tool\)/);
    const zip = unzipSync(readFileSync(path.join(out, 'a.mur.zip')));
    expect(Object.keys(zip).sort()).toEqual(['crashy.wasm', 'murmur.yaml']);
    expect(readFileSync(path.join(out, 'a.mur.zip')).equals(readFileSync(path.join(out, 'b.mur.zip')))).toBe(true);
    expect(/sha256 ([0-9a-f]{64})/.exec(a.out)![1]).toBe(/sha256 ([0-9a-f]{64})/.exec(b.out)![1]);
  });

  it('refuses a component of the wrong world: a tool component declared as a hook', async () => {
    const dir = await toolFolder('not-a-hook', 'hook');
    const r = await mur(['pack', dir, '--output', path.join(tmp('out-'), 'x.mur.zip')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /not-a-hook\.wasm does not export murmur:hook\/lifecycle, which a hook artifact must; it exports murmur:tool\/run@0\.1\.0 \[E-PKG-001\]/,
    );
    expect(r.err).toMatch(/hint: build it against the murmur:runtime\/hook world/);
  });

  it('packs exactly requires_files, and refuses a listed file that is missing (E-PKG-003)', async () => {
    const dir = await toolFolder('listed', 'tool', 'requires_files: [listed.wasm, README.md]\n');
    writeFileSync(path.join(dir, 'README.md'), '# listed');
    writeFileSync(path.join(dir, 'unlisted.txt'), 'not packed');
    const file = path.join(tmp('out-'), 'l.mur.zip');
    expect((await mur(['pack', dir, '--output', file])).code).toBe(0);
    expect(Object.keys(unzipSync(readFileSync(file))).sort()).toEqual(['README.md', 'listed.wasm', 'murmur.yaml']);
    const bad = await toolFolder('missing', 'tool', 'requires_files: [missing.wasm, gone.md]\n');
    const r = await mur(['pack', bad]);
    expect(r.err).toMatch(/requires_files\[1\]: requires_files\[1\] 'gone\.md' does not exist/);
    expect(r.err).toMatch(/\[E-PKG-003\]/);
  });

  it('mur pack, publish, install and pull explain themselves', async () => {
    for (const c of ['pack', 'publish', 'install', 'pull']) {
      const r = await mur([c, '--help']);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(new RegExp(`usage: mur ${c}`));
    }
  });
});

describe('mur publish and mur install', () => {
  it('publish puts an artifact folder into a registry folder; install puts a package into a capsule and pins it in murmur.lock', async () => {
    const dir = await toolFolder('crashy');
    const reg = tmp('reg-');
    const p = await mur(['publish', dir, '--registry', reg]);
    expect(p.code, p.err).toBe(0);
    expect(existsSync(path.join(reg, 'crashy', '1.0.0', 'artifact.json'))).toBe(true);

    const pkg = path.join(tmp('out-'), 'crashy-1.0.0.mur.zip');
    await mur(['pack', dir, '--output', pkg]);
    const capsule = tmp('caps-');
    writeFileSync(path.join(capsule, 'murmur.yaml'), 'name: c\nversion: 1.0.0\nartifacts:\n  - {name: crashy, version: 1.0.0}\n');
    const i = await mur(['install', pkg, '--capsule', capsule]);
    expect(i.code, i.err).toBe(0);
    expect(i.out).toMatch(/murmur\.lock created: crashy 1\.0\.0/);
    const rec = JSON.parse(readFileSync(path.join(capsule, 'registry', 'crashy', '1.0.0', 'artifact.json'), 'utf8')) as { package_sha256: string };
    expect(rec.package_sha256).toMatch(/^[0-9a-f]{64}$/);
    const lock = readLock(capsule)!;
    expect(lock.artifacts).toMatchObject([{ name: 'crashy', version: '1.0.0', packageSha256: rec.package_sha256 }]);
  });

  it('install refuses what is not a .mur.zip, and a corrupt package, with the fix', async () => {
    const r = await mur(['install', 'component.wasm', '--capsule', tmp('caps-')]);
    expect(r.err).toMatch(/mur install takes a \.mur\.zip package file.*\[E-CLI-023\]/);
    const bad = path.join(tmp('out-'), 'bad.mur.zip');
    writeFileSync(bad, 'PK not really');
    const b = await mur(['install', bad, '--capsule', tmp('caps-')]);
    expect(b.err).toMatch(/is not a readable \.mur\.zip package.*\[E-PKG-004\]/);
    mkdirSync(tmp('x-'), { recursive: true });
  });
});
