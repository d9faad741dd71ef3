/**
 * Capsules written for the reference runtime (Murmur) run unchanged: its own manifest, lock and
 * package formats (as the reference documents them: manifest, murmur.lock, .mur.zip), each difference either working as
 * in the reference or refused with what to write instead. Real components, real zips, the real CLI,
 * the scripted provider speaking the OpenAI wire format.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { mur } from '../cli/mur.ts';
import { parseArtifactManifest } from '../../runtime/manifest/artifact.ts';
import { parseManifest } from '../../runtime/manifest/capsule.ts';
import { CAPSULE_REFERENCE_KEYS } from '../../runtime/manifest/reference-keys.ts';
import { parseLock, readLock, renderLock } from '../../runtime/registry/lock.ts';
import { sha256 } from '../../runtime/registry/package.ts';
import { stageCapsule } from '../../runtime/session/stage.ts';
import { fixture } from '../fixtures/build.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { makeRegistry } from '../loop/kit.ts';
import { publish } from '../../runtime/registry/registry.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { tmp } from '../registry/helpers.ts';

function errorsOf(f: () => unknown): { code: string; message: string; hint?: string }[] {
  try {
    f();
  } catch (e) {
    return (e as { errors?: { code: string; message: string; hint?: string }[] }).errors ?? [e as { code: string; message: string }];
  }
  return [];
}

/** A tool artifact manifest as the reference's default-artifacts write them (§2.1). */
const MURMUR_TOOL_MANIFEST = `name: crashy
version: 0.3.1
runtime: wasm
implementation: wasm
execution: wasm
requires_files:
  - crashy.wasm
description: Crashes on request.
tags: [test, wasm]
input_schema: '{"type": "object", "properties": {"text": {"type": "string"}}}'
`;

/** A `.mur.zip` in the reference's package layout (§8): murmur.yaml and the component at the root. */
async function murmurPackage(manifest = MURMUR_TOOL_MANIFEST): Promise<Uint8Array> {
  return zipSync({ 'murmur.yaml': Buffer.from(manifest), 'crashy.wasm': readFileSync(await watFixture('crash-tool')) });
}

describe('the reference runtime artifact manifest', () => {
  it('runtime: wasm, implementation, execution, requires_files and a JSON-string input_schema are accepted', () => {
    const m = parseArtifactManifest(MURMUR_TOOL_MANIFEST, 'murmur.yaml');
    expect(m).toMatchObject({
      name: 'crashy',
      version: '0.3.1',
      runtime: 'tool',
      roleFromEntry: true,
      requiresFiles: ['crashy.wasm'],
      inputSchema: { type: 'object' },
    });
  });

  it('runtime: native is refused with what to write instead', () => {
    const [e] = errorsOf(() => parseArtifactManifest('name: n\nversion: 1.0.0\nruntime: native\n', 'murmur.yaml'));
    expect(e!.code).toBe('E-MAN-004');
    expect(e!.message).toMatch(/'runtime: native' is not supported/);
    expect(e!.hint).toMatch(/write `runtime: tool` \(or `runtime: wasm`\)/);
  });
});

describe('the reference runtime capsule manifest', () => {
  it('inference.transport: http and inference.api_key: ${VAR} are accepted; a path in network.allow is taken for its destination', () => {
    const m = parseManifest(
      [
        'name: ported',
        'version: 0.1.0',
        'artifacts:',
        '  - {name: drv, version: 0.1.0, runtime: driver}',
        'capabilities:',
        '  network:',
        '    allow: ["https://api.openai.com/v1"]',
        'inference:',
        '  transport: http',
        '  endpoint: https://api.openai.com',
        '  model: gpt-4o',
        '  api_key: ${OPENAI_API_KEY}',
        '  driver: {artifact: drv}',
      ].join('\n'),
      'murmur.yaml',
    );
    expect(m.inference).toMatchObject({ transport: 'http', apiKey: '${OPENAI_API_KEY}' });
    expect(m.capabilities.network.allow).toEqual(['https://api.openai.com/v1']);
  });

  it('inference.transport: process is refused saying what to write instead', () => {
    const errs = errorsOf(() =>
      parseManifest(
        'name: p\nversion: 1.0.0\ninference:\n  transport: process\n  command: claude\n  model: m\n  driver: {artifact: d}\nartifacts:\n  - {name: d, version: 1.0.0, runtime: driver}\n',
        'murmur.yaml',
      ),
    );
    const t = errs.find((e) => e.message.includes('transport'))!;
    expect(t.code).toBe('E-MAN-004');
    expect(t.hint).toMatch(/remove `transport: process`.*name a driver/);
  });
});

/** Builds a minimal capsule manifest holding `key: value` at the schema path `p` (`[]` = one list item). */
function manifestWith(p: string, value: unknown): string {
  const parts = p.split('.');
  const inner = parts.reduceRight<unknown>(
    (acc, k) => ({ [k.replace('[]', '')]: k.endsWith('[]') ? [{ name: 't', version: '1.0.0', ...(acc as object) }] : acc }),
    value,
  );
  return stringify({ name: 'ported', version: '0.1.0', ...(inner as Record<string, unknown>) });
}

describe('the reference runtime capsule manifest: every other key (murmur.md §2.2, §13)', () => {
  const V02 = [
    'name: ported-v02',
    'version: 0.2.0',
    'mur_version: 0.2.0',
    'registry: {default: remote, remote_url: "https://registry.example.com"}',
    'artifacts:',
    '  - {name: drv, version: 0.1.0, runtime: driver}',
    '  - {name: notes, version: 1.0.0, runtime: skill, prompt_payload: false}',
    'capabilities:',
    '  containment: advisory',
    '  network: {allow: ["https://api.example.com"], unix_sockets: true}',
    '  filesystem: {workdir_exec: true}',
    'inference:',
    '  provider: {artifact: drv}',
    '  endpoint: https://api.example.com',
    '  model: m',
    '  max_task_reopens: 3',
    'lifecycle: {task_acceptance: queue, after_task: exit}',
  ].join('\n');

  it('the keys whose meaning applies are accepted: mur_version, registry, provider (= driver), inference.max_task_reopens (= lifecycle), containment advisory, workdir_exec/unix_sockets true, after_task exit, prompt_payload false', () => {
    const m = parseManifest(V02, 'murmur.yaml');
    expect(m.inference!.driver).toEqual({ artifact: 'drv' });
    expect(m.lifecycle.maxTaskReopens).toBe(3);
    expect((m.inference as unknown as Record<string, unknown>).provider).toBeUndefined();
    expect((m.inference as unknown as Record<string, unknown>).maxTaskReopens).toBeUndefined();
    expect(m.lifecycle.taskAcceptance).toBe('queue');
  });

  it('E-MAN-012: provider and driver both, or inference.max_task_reopens disagreeing with lifecycle.max_task_reopens', () => {
    const both = errorsOf(() =>
      parseManifest(V02.replace('  provider: {artifact: drv}', '  provider: {artifact: drv}\n  driver: {artifact: drv}'), 'murmur.yaml'),
    );
    expect(both.map((e) => e.code)).toEqual(['E-MAN-012']);
    expect(both[0]!.hint).toBe('keep `driver:` and remove `provider:`');
    const reopen = errorsOf(() => parseManifest(V02.replace('after_task: exit}', 'after_task: exit, max_task_reopens: 1}'), 'murmur.yaml'));
    expect(reopen.map((e) => e.message)).toEqual([
      "inference.max_task_reopens (3, the reference runtime's v0.2 spelling) disagrees with lifecycle.max_task_reopens (1)",
    ]);
    const neither = errorsOf(() => parseManifest(V02.replace('  provider: {artifact: drv}\n', ''), 'murmur.yaml'));
    expect(neither.map((e) => [e.code, e.message])).toEqual([['E-MAN-002', "missing required field 'driver' in 'inference'"]]);
  });

  it.each([
    ['capabilities.containment', 'sealed', /'containment: sealed' cannot be honoured: this runtime applies no OS containment/, /write `containment: advisory`/],
    [
      'capabilities.filesystem.workdir_exec',
      false,
      /'workdir_exec: false' cannot be honoured: there is no Landlock here/,
      /remove the key \(or write `true`\)/,
    ],
    ['capabilities.network.unix_sockets', false, /'unix_sockets: false' cannot be honoured: shell subprocesses are not seccomp-filtered/, /remove the key/],
    ['lifecycle.after_task', 'sleep', /'after_task: sleep' cannot be honoured/, /`mur serve` and `task_acceptance: queue`/],
    ['artifacts[].prompt_payload', true, /'prompt_payload: true' cannot be honoured: a skill's text is staged/, /inference\.system_prompt_file/],
  ])('E-MAN-026: %s: %j is refused saying why and what to write', (p, value, message, hint) => {
    const errs = errorsOf(() => parseManifest(manifestWith(p, value), 'murmur.yaml'));
    expect(errs.map((e) => e.code)).toEqual(['E-MAN-026']);
    expect(errs[0]!.message).toMatch(message);
    expect(errs[0]!.hint).toMatch(hint);
  });

  it('E-MAN-026: local_source, network.internal_port and capabilities.resources are refused with what to write instead (not "unknown key")', () => {
    const local = errorsOf(() =>
      parseManifest('name: p\nversion: 1.0.0\nartifacts:\n  - name: mine\n    version: 1.0.0\n    local_source: true\n', 'murmur.yaml'),
    );
    expect(local.map((e) => e.code)).toEqual(['E-MAN-026']);
    expect(local[0]!.message).toBe(
      "'local_source' (artifacts[].local_source, a key of the reference runtime) is not supported here: an artifact is staged from a registry, a URL or an OCI registry, not from a folder named in the manifest",
    );
    expect(local[0]!.hint).toMatch(/^publish the folder into the capsule's registry \(`mur publish <folder> --registry <capsule>\/registry`/);
    const port = errorsOf(() => parseManifest('name: p\nversion: 1.0.0\nnetwork:\n  internal_port: 8080\n', 'murmur.yaml'));
    expect(port.map((e) => e.code)).toEqual(['E-MAN-026']);
    expect(port[0]!.hint).toMatch(/mur serve --a2a-port <port>/);
    const res = errorsOf(() => parseManifest('name: p\nversion: 1.0.0\ncapabilities:\n  resources:\n    max_processes: 64\n', 'murmur.yaml'));
    expect(res[0]!.hint).toMatch(/the Capsule's `spec.resources`/);
  });

  it.each(CAPSULE_REFERENCE_KEYS.map((k) => [k.path, k.instead] as const))('E-MAN-026 for %s, with its hint', (p, instead) => {
    // (the minimal manifest around it may lack a required sibling, e.g. shell.allow: reported apart)
    const errs = errorsOf(() => parseManifest(manifestWith(p, 1), 'murmur.yaml'));
    const refused = errs.filter((e) => e.code === 'E-MAN-026');
    expect(refused.map((e) => e.hint)).toEqual([instead]);
    expect(refused[0]!.message).toContain(`(${p}, a key of the reference runtime) is not supported here`);
    expect(errs.filter((e) => e.code === 'E-MAN-005')).toEqual([]);
  });
});

describe('the reference runtime murmur.lock', () => {
  const LOCK = `lock_version: 1\nartifacts:\n  - name: crashy\n    resolved_version: 0.3.1\n    sha256:\n      wasm: ${'a'.repeat(64)}\n`;

  it('is read (resolved_version, sha256.wasm) and written back in its own format', () => {
    const lock = parseLock(LOCK, 'murmur.lock');
    expect(lock.artifacts).toEqual([{ name: 'crashy', version: '0.3.1', sha256: '', packageSha256: 'a'.repeat(64) }]);
    expect(parseLock(renderLock(lock), 'murmur.lock')).toEqual(lock);
    expect(renderLock(lock)).toMatch(/resolved_version: "0\.3\.1"\n {4}sha256:\n {6}wasm: "a{64}"/);
  });

  it("a .mur.zip installed as it is satisfies the lock's package pin; another package is refused (E-REG-004)", async () => {
    const pkg = await murmurPackage();
    const capsule = tmp('ported-');
    writeFileSync(path.join(capsule, 'murmur.yaml'), 'name: ported\nversion: 0.1.0\nartifacts:\n  - {name: crashy, version: 0.3.1, runtime: tool}\n');
    const file = path.join(tmp('pkgs-'), 'crashy-0.3.1.mur.zip');
    writeFileSync(file, pkg);
    const reg = path.join(capsule, 'registry');
    const i = await mur(['install', file, '--registry', reg, '--capsule', tmp('elsewhere-')]);
    expect(i.code, i.err).toBe(0);
    // The reference's own lock, pinning this package's hash.
    writeFileSync(
      path.join(capsule, 'murmur.lock'),
      `lock_version: 1\nartifacts:\n  - name: crashy\n    resolved_version: 0.3.1\n    sha256:\n      wasm: ${sha256(pkg)}\n`,
    );
    const staged = await stageCapsule({ capsuleDir: capsule, registryDir: reg, workRoot: tmp('work-') });
    expect(staged.artifacts[0]).toMatchObject({ name: 'crashy', version: '0.3.1', runtime: 'tool', packageSha256: sha256(pkg) });
    writeFileSync(path.join(capsule, 'murmur.lock'), LOCK);
    const err = await stageCapsule({ capsuleDir: capsule, registryDir: reg, workRoot: tmp('work-') }).catch(
      (e: { errors: { code: string; message: string }[] }) => e.errors[0]!,
    );
    expect(err).toMatchObject({ code: 'E-REG-004' });
    expect((err as { message: string }).message).toMatch(/pins package a{64}/);
  });

  it('a version pinned in the lock is the one staged, as in the reference (and the difference is noted)', async () => {
    const reg = tmp('reg-');
    for (const v of ['1.0.0', '1.1.0']) {
      const art = tmp('art-');
      writeFileSync(path.join(art, 'murmur.yaml'), `name: echo\nversion: ${v}\nruntime: tool\n`);
      writeFileSync(path.join(art, 'component.wasm'), readFileSync(await watFixture('crash-tool')));
      publish(reg, art);
    }
    const capsule = tmp('pinned-');
    writeFileSync(path.join(capsule, 'murmur.yaml'), 'name: pinned\nversion: 1.0.0\nartifacts:\n  - {name: echo, version: 1.0.0}\n');
    await stageCapsule({ capsuleDir: capsule, registryDir: reg, workRoot: tmp('work-') });
    writeFileSync(path.join(capsule, 'murmur.yaml'), 'name: pinned\nversion: 1.0.0\nartifacts:\n  - {name: echo, version: 1.1.0}\n');
    const staged = await stageCapsule({ capsuleDir: capsule, registryDir: reg, workRoot: tmp('work-') });
    expect(staged.artifacts[0]!.version).toBe('1.0.0');
    expect(staged.notices).toEqual([expect.stringMatching(/echo: murmur\.yaml asks for version 1\.1\.0, murmur\.lock pins 1\.0\.0; staging 1\.0\.0/)]);
    expect(readLock(capsule)!.artifacts[0]!.version).toBe('1.0.0');
  });
});

describe('mur run --manifest with the OpenAI driver, as a ported capsule writes it', () => {
  it('endpoint without /v1, api_key from ${VAR}, the endpoint copied into network.allow, mur_version, containment advisory, the older provider spelling: the task completes', async () => {
    const provider = await startScriptedProvider({ turns: [{ text: 'ported and running' }], apiKey: 'sk-ported' });
    try {
      const reg = await makeRegistry([{ component: 'driver-openai', name: 'openai', version: '0.1.0', runtime: 'driver' }]);
      const capsule = tmp('ported-run-');
      mkdirSync(capsule, { recursive: true });
      writeFileSync(
        path.join(capsule, 'murmur.yaml'),
        [
          'name: ported-run',
          'version: 0.1.0',
          'mur_version: 0.2.0',
          'artifacts:',
          '  - {name: openai, version: 0.1.0, runtime: driver}',
          'capabilities:',
          '  containment: advisory',
          '  network:',
          `    allow: ["${provider.url}/v1"]`,
          'inference:',
          '  transport: http',
          `  endpoint: ${provider.url}`,
          '  model: gpt-test',
          '  api_key: ${PORTED_KEY}',
          '  provider: {artifact: openai}',
          '  max_task_reopens: 0',
          'lifecycle: {after_task: exit}',
        ].join('\n'),
      );
      await fixture('driver-openai');
      const r = await mur(['run', '--manifest', path.join(capsule, 'murmur.yaml'), '--task', 'hi', '--registry', reg, '--work-root', tmp('w-')], {
        PORTED_KEY: 'sk-ported',
      });
      expect(r.err).not.toMatch(/task failed/);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/ported and running/);
      expect(provider.requests[0]).toMatchObject({ path: '/v1/chat/completions', status: 200 });
      expect(provider.requests[0]!.headers.authorization).toBe('Bearer sk-ported');
    } finally {
      await provider.stop();
    }
  });

  it('an api_key naming an unset variable fails before any inference, naming the variable and the fix (E-RUN-015)', async () => {
    const reg = await makeRegistry([{ component: 'driver-openai', name: 'openai', version: '0.1.0', runtime: 'driver' }]);
    const capsule = tmp('ported-nokey-');
    writeFileSync(
      path.join(capsule, 'murmur.yaml'),
      'name: nokey\nversion: 0.1.0\nartifacts:\n  - {name: openai, version: 0.1.0, runtime: driver}\ninference:\n  endpoint: http://127.0.0.1:9\n  model: m\n  api_key: ${SURELY_UNSET_KEY}\n  driver: {artifact: openai}\n',
    );
    const r = await mur(['run', '--manifest', path.join(capsule, 'murmur.yaml'), '--task', 'hi', '--registry', reg, '--work-root', tmp('w-')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/inference\.api_key names \$\{SURELY_UNSET_KEY\}, which is not set.*\[E-RUN-015\]/);
    expect(r.err).toMatch(/hint: export SURELY_UNSET_KEY=<key>/);
  });

  it('--manifest naming another file name is refused with what to do (E-CLI-003)', async () => {
    const r = await mur(['run', '--manifest', '/tmp/capsule.yaml', '--task', 'x']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/a capsule manifest is named murmur\.yaml.*\[E-CLI-003\]/);
  });
});
