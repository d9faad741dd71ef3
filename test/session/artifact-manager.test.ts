import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactManager } from '../../runtime/session/artifact-manager.ts';
import { isReadOnlyError, readLock } from '../../runtime/registry/lock.ts';
import { stageCapsule, type StagedArtifact } from '../../runtime/session/stage.ts';
import { fakeComponent, makeCapsule, publishSpec, read, tmp, tree } from '../registry/helpers.ts';

const CAPSULE = `name: script-demo
version: 1.0.0
artifacts:
  - name: echo
    version: 1.0.0
capabilities:
  network:
    allow: [api.example.com]
`;

async function session() {
  const reg = tmp();
  publishSpec(reg, { name: 'echo', version: '1.0.0', extra: 'tags: [io]\ninput_schema: {type: object, properties: {text: {type: string}}}\n' });
  publishSpec(reg, { name: 'fetcher', version: '0.3.0', extra: 'tags: [net, http]\noutput_schema: \'{"type":"string"}\'\n' });
  publishSpec(reg, { name: 'fetcher', version: '0.4.0' });
  const caps = makeCapsule(CAPSULE);
  const staged = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: tmp() });
  return { reg, caps, staged };
}

describe('artifact manager', () => {
  it('list, describe and diagnostics report the staged session', async () => {
    const { staged } = await session();
    const am = new ArtifactManager(staged);
    expect(am.list()).toEqual([{ name: 'echo', version: '1.0.0', runtime: 'wasm' }]);
    expect(am.describe('echo')).toEqual({
      tag: 'ok',
      val: {
        name: 'echo',
        version: '1.0.0',
        description: 'The echo artifact.',
        tags: ['io'],
        runtime: 'wasm',
        inputSchema: '{"type":"object","properties":{"text":{"type":"string"}}}',
      },
    });
    expect(am.describe('nope')).toEqual({ tag: 'err', val: "artifact 'nope' is not installed in this session (installed: echo)" });
    const d = am.diagnostics();
    expect(d.tag).toBe('ok');
    if (d.tag === 'ok') {
      expect(d.val.capsuleId).toBe(staged.sessionId);
      expect(d.val.capsuleId).toMatch(/^ses_[0-9a-f]{32}$/);
      expect(d.val.installed).toEqual([{ name: 'echo', version: '1.0.0', runtime: 'wasm' }]);
      expect(JSON.parse(d.val.capabilities).network.allow).toEqual(['api.example.com']);
    }
  });

  it('search and remove return a not-implemented error', async () => {
    const am = new ArtifactManager((await session()).staged);
    expect(am.search('anything')).toEqual({ tag: 'err', val: 'not implemented: artifact-manager search is not supported by this runtime' });
    expect(am.remove('echo')).toEqual({ tag: 'err', val: 'not implemented: artifact-manager remove is not supported by this runtime' });
  });

  it('pull installs under tools/<name>/, updates the lock, and is immediately visible to list/describe', async () => {
    const { reg, caps, staged } = await session();
    const installed: StagedArtifact[] = [];
    const am = new ArtifactManager(staged, { onInstalled: (a) => installed.push(a) });
    expect(am.pull('fetcher', '0.3.0')).toEqual({ tag: 'ok', val: { name: 'fetcher', version: '0.3.0', runtime: 'wasm' } });
    expect(tree(path.join(staged.workdir.tools, 'fetcher'))).toEqual(['fetcher.wasm', 'murmur.yaml']);
    expect(readFileSync(path.join(staged.workdir.tools, 'fetcher', 'fetcher.wasm'))).toEqual(readFileSync(path.join(reg, 'fetcher/0.3.0/fetcher.wasm')));
    expect(am.list().map((a) => a.name)).toEqual(['echo', 'fetcher']);
    const info = am.describe('fetcher');
    expect(info.tag === 'ok' && info.val).toMatchObject({ tags: ['net', 'http'], outputSchema: '{"type":"string"}' });
    expect(staged.artifacts.at(-1)).toMatchObject({ name: 'fetcher', origin: 'pull', wasmPath: path.join(staged.workdir.tools, 'fetcher', 'fetcher.wasm') });
    expect(installed.map((a) => a.name)).toEqual(['fetcher']);
    const lock = readLock(caps)!;
    expect(lock.artifacts.map((e) => `${e.name}@${e.version}`)).toEqual(['echo@1.0.0', 'fetcher@0.3.0']);
    expect(lock.artifacts[1]!.sha256).toBe(staged.artifacts.at(-1)!.sha256);
    // Idempotent for the same version; a different version of an installed artifact is refused.
    expect(am.pull('fetcher', '0.3.0').tag).toBe('ok');
    const again = am.pull('fetcher', '0.4.0');
    expect(again.tag).toBe('err');
    expect(again.val).toContain("artifact 'fetcher' is already installed at version 0.3.0");
  });

  it('a read-only capsule folder (a ConfigMap in a pod) keeps no lock, at staging and at pull; any other write failure is an error', () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM']) {
      expect(isReadOnlyError(Object.assign(new Error('x'), { code }))).toBe(true);
      expect(isReadOnlyError({ cause: { code } })).toBe(true);
    }
    expect(isReadOnlyError(Object.assign(new Error('x'), { code: 'ENOSPC' }))).toBe(false);
    expect(isReadOnlyError(new Error('x'))).toBe(false);
  });

  it('pull refuses a lock pin conflict before writing anything', async () => {
    const { caps, staged } = await session();
    // Pin fetcher at 0.4.0 (as a previous session's pull would have).
    const am0 = new ArtifactManager(staged);
    const lockBefore = read(path.join(caps, 'murmur.lock'));
    writeFileSync(path.join(caps, 'murmur.lock'), `${lockBefore}  - name: "fetcher"\n    version: "0.4.0"\n    sha256: "${'e'.repeat(64)}"\n`);
    const pinned = read(path.join(caps, 'murmur.lock'));
    const toolsBefore = tree(staged.workdir.tools);
    const r = am0.pull('fetcher', '0.3.0');
    expect(r.tag).toBe('err');
    expect(r.val).toContain("pull fetcher 0.3.0 refused: artifact 'fetcher' resolves to version 0.3.0 but murmur.lock pins version 0.4.0 [E-REG-003]");
    const r2 = am0.pull('fetcher', '0.4.0');
    expect(r2.val).toContain('[E-REG-004]');
    expect(read(path.join(caps, 'murmur.lock'))).toBe(pinned);
    expect(tree(staged.workdir.tools)).toEqual(toolsBefore);
    expect(am0.list().map((a) => a.name)).toEqual(['echo']);
  });

  it('pull refuses a registry hash mismatch and a missing artifact before writing anything', async () => {
    const { reg, caps, staged } = await session();
    const am = new ArtifactManager(staged);
    writeFileSync(path.join(reg, 'fetcher/0.3.0/fetcher.wasm'), fakeComponent('tampered'));
    const lockBefore = read(path.join(caps, 'murmur.lock'));
    const r = am.pull('fetcher', '0.3.0');
    expect(r.tag).toBe('err');
    expect(r.val).toMatch(/^pull fetcher 0\.3\.0 refused: sha256 mismatch for fetcher 0\.3\.0: fetcher\.wasm hashes to/);
    expect(existsSync(path.join(staged.workdir.tools, 'fetcher'))).toBe(false);
    expect(read(path.join(caps, 'murmur.lock'))).toBe(lockBefore);
    const m = am.pull('ghost', '1.0.0');
    expect(m.val).toContain("artifact 'ghost' version '1.0.0' is not in the registry");
    expect(m.val).toContain('[E-REG-001]');
    expect(tree(staged.workdir.tools)).toEqual(['echo/', 'echo/echo.wasm', 'echo/murmur.yaml']);
  });

  it('jcoImports: ok values returned, err values thrown with payload', async () => {
    const am = new ArtifactManager((await session()).staged);
    const j = am.jcoImports() as unknown as Record<string, (...a: string[]) => unknown>;
    expect(j.list!()).toEqual([{ name: 'echo', version: '1.0.0', runtime: 'wasm' }]);
    expect(j.pull!('fetcher', '0.4.0')).toEqual({ name: 'fetcher', version: '0.4.0', runtime: 'wasm' });
    try {
      j.search!('x');
      expect.unreachable();
    } catch (e) {
      expect((e as { payload: string }).payload).toBe('not implemented: artifact-manager search is not supported by this runtime');
    }
  });
});
