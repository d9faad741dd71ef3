import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MurErrorList } from '../../runtime/manifest/errors.ts';
import { readLock } from '../../runtime/registry/lock.ts';
import { createWorkdir } from '../../runtime/session/workdir.ts';
import { SESSION_ID_RE, isSessionId, newSessionId } from '../../runtime/session/id.ts';
import { stageCapsule } from '../../runtime/session/stage.ts';
import { fileIdentity } from '../../runtime/host/transpile-cache.ts';
import type { MurError } from '../../runtime/errors.ts';
import { artifactYaml, fakeComponent, makeCapsule, publishSpec, read, tmp, tree } from './helpers.ts';

const CAPSULE = `name: demo
version: 1.0.0
artifacts:
  - name: drv
    version: 1.0.0
    runtime: driver
  - name: echo
    version: 2.0.0
  - name: audit
    version: 0.1.0
    runtime: hook
    on_overflow: block
  - name: guard
    version: 0.2.0
    runtime: hook
capabilities:
  shell:
    allow: [ls]
  limits:
    hook_deadline_seconds: 7
inference:
  driver:
    artifact: drv
  model: m
`;

function registry(): string {
  const reg = tmp();
  publishSpec(reg, { name: 'drv', version: '1.0.0', runtime: 'driver' });
  publishSpec(reg, { name: 'echo', version: '2.0.0', extra: 'input_schema: {type: object}\n' });
  publishSpec(reg, { name: 'echo', version: '2.1.0' });
  publishSpec(reg, { name: 'audit', version: '0.1.0', runtime: 'hook', extra: 'execution_mode: async\n' });
  publishSpec(reg, { name: 'guard', version: '0.2.0', runtime: 'hook', extra: 'binding: on-shell\ncommit_policy: deny\n' });
  return reg;
}

async function refusal(p: Promise<unknown>): Promise<MurErrorList> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(MurErrorList);
    return e as MurErrorList;
  }
  throw new Error('expected staging to be refused');
}

describe('session ids and workdirs', () => {
  it('session ids are ses_ + 32 lowercase hex, random', () => {
    const ids = new Set(Array.from({ length: 200 }, newSessionId));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(/^ses_[0-9a-f]{32}$/);
    expect(SESSION_ID_RE.test(`ses_${'A'.repeat(32)}`)).toBe(false);
    expect(isSessionId(`ses_${'a'.repeat(31)}`)).toBe(false);
  });

  it('createWorkdir makes tools/<name>/, logs/, out/, an empty trace.jsonl; refuses bad ids and existing dirs', () => {
    const root = tmp();
    const id = newSessionId();
    const w = createWorkdir(root, id, [
      {
        name: 't',
        files: [
          { name: 'murmur.yaml', bytes: Buffer.from('x') },
          { name: 't.wasm', bytes: fakeComponent('t') },
        ],
      },
    ]);
    expect(w).toEqual({
      dir: path.join(root, id),
      tools: path.join(root, id, 'tools'),
      logs: path.join(root, id, 'logs'),
      out: path.join(root, id, 'out'),
      trace: path.join(root, id, 'trace.jsonl'),
    });
    expect(tree(w.dir)).toEqual(['logs/', 'logs/owner.json', 'out/', 'tools/', 'tools/t/', 'tools/t/murmur.yaml', 'tools/t/t.wasm', 'trace.jsonl']);
    expect(statSync(w.trace).size).toBe(0);
    expect(() => createWorkdir(root, id)).toThrowError(/already exists/);
    expect(() => createWorkdir(root, 'ses_nothex')).toThrowError(/invalid session id/);
  });
});

describe('stageCapsule', () => {
  it('stages: workdir layout, typed result, hooks in order, lock created on first stage', async () => {
    const reg = registry();
    const caps = makeCapsule(CAPSULE);
    const root = tmp();
    expect(existsSync(path.join(caps, 'murmur.lock'))).toBe(false);
    const s = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root });

    expect(s.sessionId).toMatch(/^ses_[0-9a-f]{32}$/);
    expect(s.workdir.dir).toBe(path.join(root, s.sessionId));
    expect(tree(s.workdir.dir)).toEqual([
      'logs/',
      'logs/owner.json',
      'out/',
      'tools/',
      'tools/audit/',
      'tools/audit/audit.wasm',
      'tools/audit/murmur.yaml',
      'tools/drv/',
      'tools/drv/drv.wasm',
      'tools/drv/murmur.yaml',
      'tools/echo/',
      'tools/echo/echo.wasm',
      'tools/echo/murmur.yaml',
      'tools/guard/',
      'tools/guard/guard.wasm',
      'tools/guard/murmur.yaml',
      'trace.jsonl',
    ]);
    expect(read(s.workdir.trace)).toBe('');
    expect(readFileSync(path.join(s.workdir.tools, 'echo/echo.wasm'))).toEqual(readFileSync(path.join(reg, 'echo/2.0.0/echo.wasm')));
    expect(read(path.join(s.workdir.tools, 'echo/murmur.yaml'))).toBe(read(path.join(reg, 'echo/2.0.0/murmur.yaml')));

    expect(s.manifest.name).toBe('demo');
    expect(s.capsuleDir).toBe(caps);
    expect(s.lock).toBe('created');
    expect(s.artifacts.map((a) => [a.name, a.version, a.runtime, a.origin])).toEqual([
      ['drv', '1.0.0', 'driver', 'registry'],
      ['echo', '2.0.0', 'tool', 'registry'],
      ['audit', '0.1.0', 'hook', 'registry'],
      ['guard', '0.2.0', 'hook', 'registry'],
    ]);
    const echo = s.artifacts[1]!;
    expect(echo.wasmPath).toBe(path.join(s.workdir.tools, 'echo', 'echo.wasm'));
    expect(echo.manifestPath).toBe(path.join(s.workdir.tools, 'echo', 'murmur.yaml'));
    expect(echo.manifest.inputSchema).toEqual({ type: 'object' });
    expect(echo.grant.shell?.allow).toEqual(['ls']);
    expect(s.driver?.name).toBe('drv');
    expect(s.hooks).toEqual([
      expect.objectContaining({
        name: 'audit',
        executionMode: 'async',
        commitPolicy: 'none',
        onOverflow: 'block',
        handlers: expect.not.arrayContaining(['on-stage']),
        deadlineSeconds: 7,
        wasmPath: path.join(s.workdir.tools, 'audit', 'audit.wasm'),
      }),
      expect.objectContaining({
        name: 'guard',
        binding: 'on-shell',
        handlers: ['on-shell'],
        executionMode: 'blocking',
        commitPolicy: 'deny',
        onOverflow: 'drop',
        deadlineSeconds: 7,
      }),
    ]);
    expect(s.hooks[1]!.grant.network.allow).toEqual([]);
    expect(s.hooks[1]!.grant.filesystem.scope).toBeNull();

    const lock = readLock(caps)!;
    expect(lock.artifacts.map((e) => e.name)).toEqual(['audit', 'drv', 'echo', 'guard']);
    expect(read(path.join(caps, 'murmur.lock')).indexOf('"audit"')).toBeLessThan(read(path.join(caps, 'murmur.lock')).indexOf('"drv"'));
    for (const a of s.artifacts) expect(lock.artifacts.find((e) => e.name === a.name)).toEqual({ name: a.name, version: a.version, sha256: a.sha256 });
  });

  it('pins each staged component to the SHA-256 of the bytes it verified and wrote (wasmSha256)', async () => {
    const reg = registry();
    const s = await stageCapsule({ capsuleDir: makeCapsule(CAPSULE), registryDir: reg, workRoot: tmp() });
    for (const a of s.artifacts) {
      expect(a.wasmSha256).toBe(
        createHash('sha256')
          .update(readFileSync(path.join(reg, a.name, a.version, `${a.name}.wasm`)))
          .digest('hex'),
      );
      expect(createHash('sha256').update(readFileSync(a.wasmPath!)).digest('hex')).toBe(a.wasmSha256);
      expect(a.wasmIdentity).toEqual(fileIdentity(a.wasmPath!));
    }
  });

  it('a second stage verifies against the lock and leaves it byte-identical; a new artifact is added to it', async () => {
    const reg = registry();
    const caps = makeCapsule(CAPSULE);
    const root = tmp();
    const first = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root });
    const before = read(path.join(caps, 'murmur.lock'));
    const second = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root });
    expect(second.lock).toBe('unchanged');
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(read(path.join(caps, 'murmur.lock'))).toBe(before);

    publishSpec(reg, { name: 'extra', version: '1.0.0' });
    writeFileSync(path.join(caps, 'murmur.yaml'), CAPSULE.replace('capabilities:', '  - name: extra\n    version: 1.0.0\ncapabilities:'));
    const third = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root });
    expect(third.lock).toBe('updated');
    expect(readLock(caps)!.artifacts.map((e) => e.name)).toEqual(['audit', 'drv', 'echo', 'extra', 'guard']);
  });

  it('a registry hash mismatch refuses before anything is written', async () => {
    const reg = registry();
    const caps = makeCapsule(CAPSULE);
    const root = tmp();
    writeFileSync(path.join(reg, 'echo/2.0.0/echo.wasm'), fakeComponent('evil'));
    const l = await refusal(stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root }));
    expect(l.code).toBe('E-REG-000');
    expect(l.codes()).toEqual(['E-REG-002']);
    expect(l.errors[0]!.message).toContain('sha256 mismatch for echo 2.0.0: echo.wasm hashes to');
    expect(tree(root)).toEqual([]);
    expect(existsSync(path.join(caps, 'murmur.lock'))).toBe(false);
  });

  it('a lock pin conflict (sha256 or version) refuses with the workdir and lock untouched', async () => {
    const reg = registry();
    const caps = makeCapsule(CAPSULE);
    const root = tmp();
    await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root });
    const lockBefore = read(path.join(caps, 'murmur.lock'));
    const rootBefore = tree(root);

    // Same version, different bytes: republish into a fresh registry.
    const reg2 = tmp();
    publishSpec(reg2, { name: 'drv', version: '1.0.0', runtime: 'driver' });
    publishSpec(reg2, { name: 'echo', version: '2.0.0', wasm: fakeComponent('rebuilt') });
    publishSpec(reg2, { name: 'audit', version: '0.1.0', runtime: 'hook', extra: 'execution_mode: async\n' });
    publishSpec(reg2, { name: 'guard', version: '0.2.0', runtime: 'hook', extra: 'binding: on-shell\ncommit_policy: deny\n' });
    const l = await refusal(stageCapsule({ capsuleDir: caps, registryDir: reg2, workRoot: root }));
    expect(l.codes()).toEqual(['E-REG-004']);
    expect(l.errors[0]!.message).toMatch(/^artifact 'echo' 2\.0\.0 has sha256 [0-9a-f]{64} but murmur\.lock pins [0-9a-f]{64}$/);
    expect(l.errors[0]!.location?.file).toBe(path.join(caps, 'murmur.lock'));
    expect(read(path.join(caps, 'murmur.lock'))).toBe(lockBefore);
    expect(tree(root)).toEqual(rootBefore);

    // A different version than the pin: the pinned one is staged, as in the reference runtime.
    writeFileSync(path.join(caps, 'murmur.yaml'), CAPSULE.replace('version: 2.0.0', 'version: 2.1.0'));
    const v = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root });
    expect(v.artifacts.find((a) => a.name === 'echo')!.version).toBe('2.0.0');
    expect(v.notices).toEqual([
      "echo: murmur.yaml asks for version 2.1.0, murmur.lock pins 2.0.0; staging 2.0.0 (delete the 'echo' entry from murmur.lock to move to 2.1.0)",
    ]);
    expect(read(path.join(caps, 'murmur.lock'))).toBe(lockBefore);
  });

  it('a bad hook contract in the registry refuses before anything is written, naming the artifact manifest and line', async () => {
    const reg = tmp();
    publishSpec(reg, { name: 'drv', version: '1.0.0', runtime: 'driver' });
    publishSpec(reg, { name: 'echo', version: '2.0.0' });
    publishSpec(reg, { name: 'audit', version: '0.1.0', runtime: 'hook' });
    // Write a registry entry whose manifest is hash-consistent but breaks the contract (publish would refuse it).
    const { writeArtifactDir } = await import('../../runtime/registry/registry.ts');
    writeArtifactDir(path.join(reg, 'guard', '0.2.0'), {
      name: 'guard',
      version: '0.2.0',
      runtime: 'hook',
      files: [
        {
          name: 'murmur.yaml',
          bytes: Buffer.from(artifactYaml({ name: 'guard', version: '0.2.0', runtime: 'hook', extra: 'binding: on-task-end\ncommit_policy: deny\n' })),
        },
        { name: 'guard.wasm', bytes: fakeComponent('guard') },
      ],
    });
    const caps = makeCapsule(CAPSULE);
    const root = tmp();
    const l = await refusal(stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root }));
    expect(l.code).toBe('E-MAN-000');
    const e = l.errors[0]!;
    expect(e.code).toBe('E-MAN-020');
    expect(e.message).toBe(
      "hook contract violation: commit_policy 'deny' is not valid for binding 'on-task-end'; binding 'on-task-end' honors commit_policy 'reopen-task'",
    );
    expect(e.location).toMatchObject({ file: path.join(reg, 'guard', '0.2.0', 'murmur.yaml'), line: 6, field: 'commit_policy' });
    expect(tree(root)).toEqual([]);
    expect(existsSync(path.join(caps, 'murmur.lock'))).toBe(false);
  });

  it('E-REG-017: a registry hook whose own contract disagrees with its capsule entry is refused (binding and mode named), nothing written', async () => {
    const reg = registry();
    // audit's own manifest: execution_mode async; guard's: binding on-shell, commit_policy deny.
    const caps = makeCapsule(
      CAPSULE.replace('version: 0.2.0\n    runtime: hook', 'version: 0.2.0\n    runtime: hook\n    binding: on-tool-call\n    commit_policy: deny').replace(
        'on_overflow: block',
        'on_overflow: block\n    execution_mode: blocking',
      ),
    );
    const root = tmp();
    const l = await refusal(stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root }));
    expect(l.codes()).toEqual(['E-REG-017', 'E-REG-017']);
    expect(l.errors[0]!.message).toBe(
      `hook 'audit': artifacts[2] declares execution_mode 'blocking' but the artifact's own manifest (${path.join(reg, 'audit', '0.1.0', 'murmur.yaml')}) declares execution_mode 'async'`,
    );
    expect(l.errors[1]!.message).toBe(
      `hook 'guard': artifacts[3] declares binding 'on-tool-call' but the artifact's own manifest (${path.join(reg, 'guard', '0.2.0', 'murmur.yaml')}) declares binding 'on-shell'`,
    );
    expect(l.errors[1]!.location).toMatchObject({ field: 'artifacts[3].binding' });
    expect(tree(root)).toEqual([]);
    expect(existsSync(path.join(caps, 'murmur.lock'))).toBe(false);
  });

  it('collects every artifact problem at once: missing (E-REG-001) and entry mismatch (E-REG-011)', async () => {
    const reg = registry();
    const caps = makeCapsule(
      CAPSULE.replace('name: echo\n    version: 2.0.0', 'name: echo\n    version: 9.9.9').replace(
        'version: 0.2.0\n    runtime: hook',
        'version: 0.2.0\n    runtime: tool',
      ),
    );
    const root = tmp();
    const l = await refusal(stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root }));
    expect(l.codes()).toEqual(['E-REG-001', 'E-REG-011']);
    expect(l.errors[1]!.message).toBe("artifact 'guard' resolved to an artifact with runtime 'hook' (murmur.yaml says 'tool')");
    expect(l.errors[1]!.location?.field).toBe('artifacts[3]');
    expect(tree(root)).toEqual([]);
  });

  it('an invalid capsule manifest refuses with every error and writes nothing', async () => {
    const caps = makeCapsule('name: demo\nversion: 1\nartifacts:\n  - name: x\n    versoin: 1\n');
    const root = tmp();
    const l = await refusal(stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: root }));
    expect(l.codes()).toEqual(['E-MAN-002', 'E-MAN-005']);
    expect(tree(root)).toEqual([]);
    expect(tree(caps)).toEqual(['murmur.yaml']);
  });

  it('a malformed murmur.lock refuses (E-REG-010)', async () => {
    const reg = registry();
    const caps = makeCapsule(CAPSULE, { 'murmur.lock': 'lock_version: 1\nartifacts: nope\n' });
    const root = tmp();
    await expect(stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: root })).rejects.toMatchObject({ code: 'E-REG-010' } satisfies Partial<MurError>);
    expect(tree(root)).toEqual([]);
  });

  it('stages a script capsule (no inference) and skills', async () => {
    const reg = tmp();
    publishSpec(reg, { name: 'style', version: '1.0.0', runtime: 'skill' });
    const caps = makeCapsule('name: script\nversion: 1.0.0\nartifacts:\n  - name: style\n    version: 1.0.0\n    runtime: skill\n');
    const s = await stageCapsule({ capsuleDir: caps, registryDir: reg, workRoot: tmp() });
    expect(s.manifest.kind).toBe('script');
    expect(s.driver).toBeUndefined();
    expect(s.artifacts[0]!.wasmPath).toBeUndefined();
    expect(read(s.artifacts[0]!.skillPath!)).toBe('# style\n');
  });
});
