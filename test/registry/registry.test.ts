import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { MurError } from '../../runtime/errors.ts';
import { MurErrorList } from '../../runtime/manifest/errors.ts';
import { artifactDigest, sha256Hex } from '../../runtime/contracts/digest.ts';
import { checkPin, parseLock, readLock, renderLock, upsertLock, writeLock } from '../../runtime/registry/lock.ts';
import { listRegistry, listVersions, publish, resolveFromRegistry } from '../../runtime/registry/registry.ts';
import { artifactYaml, fakeComponent, makeArtifactDir, publishSpec, tmp, tree } from './helpers.ts';

function codeOf(fn: () => unknown): MurError {
  try {
    fn();
  } catch (e) {
    return e as MurError;
  }
  throw new Error('expected a refusal');
}

describe('registry layout and publish', () => {
  it('publishes <name>/<version>/{murmur.yaml,<name>.wasm,artifact.json} with a sha256sum-reproducible digest', () => {
    const reg = tmp();
    const res = publishSpec(reg, { name: 'echo', version: '1.0.0' });
    expect(tree(reg)).toEqual(['echo/', 'echo/1.0.0/', 'echo/1.0.0/artifact.json', 'echo/1.0.0/echo.wasm', 'echo/1.0.0/murmur.yaml']);
    const dir = path.join(reg, 'echo', '1.0.0');
    const rec = JSON.parse(readFileSync(path.join(dir, 'artifact.json'), 'utf8'));
    const wasm = readFileSync(path.join(dir, 'echo.wasm'));
    const yaml = readFileSync(path.join(dir, 'murmur.yaml'));
    expect(rec).toEqual({
      format: 1,
      name: 'echo',
      version: '1.0.0',
      runtime: 'tool',
      sha256: res.sha256,
      files: { 'echo.wasm': sha256Hex(wasm), 'murmur.yaml': sha256Hex(yaml) },
    });
    expect(res.sha256).toBe(
      artifactDigest([
        { name: 'murmur.yaml', bytes: yaml },
        { name: 'echo.wasm', bytes: wasm },
      ]),
    );
    // The documented shell recipe reproduces the digest.
    const viaShell = execFileSync('sh', ['-c', 'sha256sum murmur.yaml echo.wasm | LC_ALL=C sort -k2 | sha256sum'], { cwd: dir, encoding: 'utf8' }).split(
      ' ',
    )[0];
    expect(viaShell).toBe(res.sha256);
  });

  it('picks component.wasm, <name>.wasm or the only .wasm; refuses ambiguity (E-REG-012)', () => {
    const reg = tmp();
    expect(publishSpec(reg, { name: 'a', version: '1.0.0', wasmName: 'whatever.wasm' }).name).toBe('a');
    const src = makeArtifactDir(tmp(), { name: 'b', version: '1.0.0', wasmName: 'x.wasm' });
    writeFileSync(path.join(src, 'y.wasm'), fakeComponent('y'));
    const e = codeOf(() => publish(reg, src));
    expect(e.code).toBe('E-REG-012');
    expect(e.message).toContain('several .wasm files');
  });

  it('republishing identical content is a no-op; different content under the same version is refused', () => {
    const reg = tmp();
    const a = publishSpec(reg, { name: 'echo', version: '1.0.0' });
    expect(publishSpec(reg, { name: 'echo', version: '1.0.0' })).toEqual(a);
    const e = codeOf(() => publishSpec(reg, { name: 'echo', version: '1.0.0', wasm: fakeComponent('other') }));
    expect(e.code).toBe('E-REG-012');
    expect(e.message).toBe(`echo 1.0.0 is already published with different content (sha256 ${a.sha256})`);
  });

  it('refuses reserved versions (E-REG-005) and invalid artifact manifests (E-MAN-000)', () => {
    const reg = tmp();
    expect(codeOf(() => publishSpec(reg, { name: 'echo', version: 'latest' })).code).toBe('E-REG-005');
    const bad = codeOf(() => publishSpec(reg, { name: 'h', version: '1.0.0', runtime: 'hook', extra: 'binding: on-stage\nexecution_mode: async\n' }));
    expect(bad).toBeInstanceOf(MurErrorList);
    expect((bad as MurErrorList).codes()).toEqual(['E-MAN-020']);
    expect(tree(reg)).toEqual([]);
  });

  it('publishes skills with skill.md', () => {
    const reg = tmp();
    publishSpec(reg, { name: 'style', version: '1.0.0', runtime: 'skill' });
    expect(tree(reg)).toContain('style/1.0.0/skill.md');
    expect(resolveFromRegistry(reg, 'style', '1.0.0').payload).toBe('skill.md');
  });

  it('lists versions and artifacts', () => {
    const reg = tmp();
    publishSpec(reg, { name: 'echo', version: '1.0.0' });
    publishSpec(reg, { name: 'echo', version: '1.1.0' });
    publishSpec(reg, { name: 'drv', version: '0.1.0', runtime: 'driver' });
    expect(listVersions(reg, 'echo')).toEqual(['1.0.0', '1.1.0']);
    expect(listRegistry(reg)).toEqual([
      { name: 'drv', version: '0.1.0', runtime: 'driver' },
      { name: 'echo', version: '1.0.0', runtime: 'tool' },
      { name: 'echo', version: '1.1.0', runtime: 'tool' },
    ]);
  });
});

describe('registry verification', () => {
  it('resolves and verifies a published artifact', () => {
    const reg = tmp();
    const pub = publishSpec(reg, { name: 'echo', version: '1.0.0' });
    const a = resolveFromRegistry(reg, 'echo', '1.0.0');
    expect(a).toMatchObject({ name: 'echo', version: '1.0.0', runtime: 'tool', sha256: pub.sha256, payload: 'echo.wasm' });
    expect(a.manifest.description).toBe('The echo artifact.');
  });

  it('E-REG-001 names the published versions', () => {
    const reg = tmp();
    publishSpec(reg, { name: 'echo', version: '1.0.0' });
    const e = codeOf(() => resolveFromRegistry(reg, 'echo', '2.0.0'));
    expect(e.code).toBe('E-REG-001');
    expect(e.message).toBe(`artifact 'echo' version '2.0.0' is not in the registry ${reg}`);
    expect(e.hint).toContain("published versions of 'echo': 1.0.0");
  });

  it('E-REG-002 when the component bytes changed after publishing', () => {
    const reg = tmp();
    publishSpec(reg, { name: 'echo', version: '1.0.0' });
    writeFileSync(path.join(reg, 'echo/1.0.0/echo.wasm'), fakeComponent('tampered'));
    const e = codeOf(() => resolveFromRegistry(reg, 'echo', '1.0.0'));
    expect(e.code).toBe('E-REG-002');
    expect(e.message).toMatch(/^sha256 mismatch for echo 1\.0\.0: echo\.wasm hashes to [0-9a-f]{64} but the registry records [0-9a-f]{64}$/);
  });

  it('E-REG-002 when the manifest changed (a hook contract cannot be swapped under the hash)', () => {
    const reg = tmp();
    publishSpec(reg, { name: 'h', version: '1.0.0', runtime: 'hook', extra: 'binding: on-shell\n' });
    writeFileSync(
      path.join(reg, 'h/1.0.0/murmur.yaml'),
      artifactYaml({ name: 'h', version: '1.0.0', runtime: 'hook', extra: 'binding: on-shell\ncommit_policy: deny\n' }),
    );
    expect(codeOf(() => resolveFromRegistry(reg, 'h', '1.0.0')).code).toBe('E-REG-002');
  });

  it('E-REG-002 for extra files, E-REG-006 for a corrupt record', () => {
    const reg = tmp();
    publishSpec(reg, { name: 'echo', version: '1.0.0' });
    writeFileSync(path.join(reg, 'echo/1.0.0/extra.bin'), 'x');
    expect(codeOf(() => resolveFromRegistry(reg, 'echo', '1.0.0')).message).toContain('holds files [echo.wasm, extra.bin, murmur.yaml]');
    const reg2 = tmp();
    publishSpec(reg2, { name: 'echo', version: '1.0.0' });
    writeFileSync(path.join(reg2, 'echo/1.0.0/artifact.json'), '{');
    expect(codeOf(() => resolveFromRegistry(reg2, 'echo', '1.0.0')).code).toBe('E-REG-006');
  });
});

describe('murmur.lock', () => {
  const A = { name: 'b-tool', version: '1.0.0', sha256: 'b'.repeat(64) };
  const B = { name: 'a-drv', version: '0.1.0', sha256: 'a'.repeat(64), source: { url: 'https://x.test/a.wasm', sha256: 'c'.repeat(64) } };

  it('renders sorted, stable text and parses it back', () => {
    const text = renderLock({ lockVersion: 1, artifacts: [A, B] });
    expect(text).toBe(`# murmur.lock: pins each artifact this capsule stages (name, version, sha256 digest).
# Written by the runtime on first stage and by artifact-manager pull. Commit it.
lock_version: 1
artifacts:
  - name: "a-drv"
    version: "0.1.0"
    sha256: "${'a'.repeat(64)}"
    source:
      url: "https://x.test/a.wasm"
      sha256: "${'c'.repeat(64)}"
  - name: "b-tool"
    version: "1.0.0"
    sha256: "${'b'.repeat(64)}"
`);
    expect(renderLock({ lockVersion: 1, artifacts: [B, A] })).toBe(text);
    expect(parseLock(text, 'murmur.lock').artifacts).toEqual([B, A]);
  });

  it('writes atomically and reads back; absent = undefined', () => {
    const d = tmp();
    expect(readLock(d)).toBeUndefined();
    writeLock(d, upsertLock(undefined, [A]));
    expect(tree(d)).toEqual(['murmur.lock']);
    expect(readLock(d)?.artifacts).toEqual([A]);
    writeLock(d, upsertLock(readLock(d), [{ ...A, version: '1.0.1' }, B]));
    expect(readLock(d)?.artifacts.map((e) => `${e.name}@${e.version}`)).toEqual(['a-drv@0.1.0', 'b-tool@1.0.1']);
  });

  it('E-REG-010 for a malformed lock', () => {
    const d = tmp();
    writeFileSync(path.join(d, 'murmur.lock'), 'lock_version: 1\nartifacts:\n  - name: x\n    version: 1\n    sha256: nothex\n');
    const e = codeOf(() => readLock(d));
    expect(e.code).toBe('E-REG-010');
    expect(e.message).toBe('malformed murmur.lock: artifacts[0].sha256 is not 64 hex characters');
    expect(e.location?.field).toBe('artifacts[0].sha256');
    writeFileSync(path.join(d, 'murmur.lock'), 'lock_version: 7\nartifacts: []\n');
    expect(codeOf(() => readLock(d)).message).toContain('lock_version must be 1');
  });

  it('checkPin: no pin or same pin passes; version (E-REG-003) and sha256 (E-REG-004) conflicts refuse', () => {
    const lock = { lockVersion: 1, artifacts: [A] };
    expect(checkPin(undefined, 'l', A)).toBeUndefined();
    expect(checkPin(lock, 'l', { ...B })).toBeUndefined();
    expect(checkPin(lock, 'l', A)).toBeUndefined();
    const v = checkPin(lock, 'l', { ...A, version: '2.0.0' })!;
    expect(v.code).toBe('E-REG-003');
    expect(v.message).toBe("artifact 'b-tool' resolves to version 2.0.0 but murmur.lock pins version 1.0.0");
    const s = checkPin(lock, 'l', { ...A, sha256: 'f'.repeat(64) })!;
    expect(s.code).toBe('E-REG-004');
    expect(s.message).toBe(`artifact 'b-tool' 1.0.0 has sha256 ${'f'.repeat(64)} but murmur.lock pins ${'b'.repeat(64)}`);
  });

  it('no temp files are left behind', () => {
    const d = tmp();
    writeLock(d, upsertLock(undefined, [A]));
    writeLock(d, upsertLock(undefined, [B]));
    expect(existsSync(path.join(d, 'murmur.lock'))).toBe(true);
    expect(tree(d)).toEqual(['murmur.lock']);
  });
});
