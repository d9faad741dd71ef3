/**
 * Wasm OCI artifacts against a real registry: CNCF distribution on loopback, components pushed by
 * the real oras CLI (both from the Go module proxy, test/oci/build.sh). `source: {oci}` is staged
 * digest-pinned and verified byte for byte; `mur pull` and `mur publish --oci` speak to the same
 * registry, and oras reads what mur pushed.
 */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mur } from '../cli/mur.ts';
import { ComponentInstance, loadComponent } from '../../runtime/host/index.ts';
import { readLock } from '../../runtime/registry/lock.ts';
import { stageCapsule } from '../../runtime/session/stage.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { tmp } from '../registry/helpers.ts';
import { oras, orasPushWasm, startRegistry, type Registry } from './harness.ts';
import { BUILD_TIMEOUT_MS, ensureOciTools } from '../support/build-on-use.ts';

let reg: Registry;
let wasm: string;
// The registry and oras, built from the Go module proxy on first use (cold: minutes).
beforeAll(ensureOciTools, BUILD_TIMEOUT_MS);
beforeAll(async () => {
  reg = await startRegistry();
  wasm = await watFixture('crash-tool');
});
afterAll(async () => {
  await reg?.stop();
});

function pushDir(tag?: string): string {
  const d = tmp('oras-');
  copyFileSync(wasm, path.join(d, 'component.wasm'));
  // A custom section makes other bytes (a blob of its own) of the same component.
  if (tag) {
    const name = Buffer.from(tag);
    writeFileSync(path.join(d, 'component.wasm'), Buffer.concat([readFileSync(wasm), Buffer.from([0, name.length + 1, name.length]), name]));
  }
  return d;
}

function capsuleWith(oci: string): string {
  const dir = tmp('oci-caps-');
  writeFileSync(
    path.join(dir, 'murmur.yaml'),
    `name: oci-caps\nversion: 1.0.0\nartifacts:\n  - name: crashy\n    runtime: tool\n    source: {oci: "${oci}"}\n`,
  );
  return dir;
}

async function stageErr(dir: string): Promise<{ code?: string; message?: string }> {
  try {
    await stageCapsule({ capsuleDir: dir, registryDir: tmp('reg-'), workRoot: tmp('work-'), cacheDir: tmp('cache-') });
  } catch (e) {
    const l = e as { errors?: { code: string; message: string }[] };
    return l.errors?.[0] ?? (e as { code?: string; message?: string });
  }
  return {};
}

describe('source: {oci} (CNCF Wasm OCI artifact layout, pushed by oras)', () => {
  it('stages a digest-pinned component pushed by oras, pins it in murmur.lock, and the component runs', async () => {
    const digest = await orasPushWasm(`${reg.host}/tools/crashy:1.0.0`, pushDir());
    const ref = `${reg.host}/tools/crashy:1.0.0@${digest}`;
    const dir = capsuleWith(ref);
    const cache = tmp('cache-');
    const staged = await stageCapsule({ capsuleDir: dir, registryDir: tmp('reg-'), workRoot: tmp('work-'), cacheDir: cache });
    const a = staged.artifacts[0]!;
    expect(readFileSync(a.wasmPath!).equals(readFileSync(wasm))).toBe(true);
    expect(readLock(dir)!.artifacts[0]).toMatchObject({ name: 'crashy', source: { url: `oci://${ref}`, sha256: digest.slice(7) } });
    const inst = new ComponentInstance(await loadComponent(a.wasmPath!), { grants: { env: {}, networkAllow: [] }, deadlineMs: 20_000, memoryBytes: 16 << 20 });
    try {
      expect((await inst.call<{ data: string }>(['run', 'run'], [{ data: 'ping' }])).data).toBe('ok');
    } finally {
      await inst.close();
    }
    // A second stage uses the verified cache: the registry may be gone.
    await stageCapsule({ capsuleDir: dir, registryDir: tmp('reg-'), workRoot: tmp('work-'), cacheDir: cache });
  });

  it('a component whose bytes in the registry changed is refused before use (E-REG-008), nothing cached', async () => {
    const digest = await orasPushWasm(`${reg.host}/tools/tampered:1.0.0`, pushDir('tampered'));
    // Corrupt the layer blob in the registry's own storage.
    const layer = (
      JSON.parse(await oras(['manifest', 'fetch', '--plain-http', `${reg.host}/tools/tampered@${digest}`], tmp('o-'))) as { layers: { digest: string }[] }
    ).layers[0]!.digest.slice(7);
    const blob = path.join(reg.storage, 'docker/registry/v2/blobs/sha256', layer.slice(0, 2), layer, 'data');
    const bytes = readFileSync(blob);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    writeFileSync(blob, bytes);
    const e = await stageErr(capsuleWith(`${reg.host}/tools/tampered:1.0.0@${digest}`));
    expect(e.code).toBe('E-REG-008');
    expect(e.message).toMatch(new RegExp(`blob sha256:${layer} hashes to sha256:`));
  });

  it('a digest that is not the manifest the registry serves is refused (E-REG-008)', async () => {
    await orasPushWasm(`${reg.host}/tools/other:1.0.0`, pushDir());
    const wrong = `sha256:${'0'.repeat(64)}`;
    const e = await stageErr(capsuleWith(`${reg.host}/tools/other:1.0.0@${wrong}`));
    // The registry has no manifest with that digest: refused, never the tag's content.
    expect(e.code).toMatch(/E-REG-008|E-REG-016/);
    expect(e.message).toMatch(/other:1\.0\.0@sha256:0{64}/);
  });

  it('an artifact that is not in the Wasm layout is refused naming the config media type and the oras command to use', async () => {
    const d = pushDir();
    const out = await oras(['push', '--plain-http', `${reg.host}/tools/plain:1.0.0`, 'component.wasm'], d);
    const digest = /Digest: (sha256:[0-9a-f]{64})/.exec(out)![1]!;
    const e = await stageErr(capsuleWith(`${reg.host}/tools/plain:1.0.0@${digest}`));
    expect(e.code).toBe('E-REG-016');
    expect(e.message).toMatch(/config media type is "application\/vnd\.oci\.empty\.v1\+json", not application\/vnd\.wasm\.config\.v0\+json/);
  });

  it('a tag without a digest is refused in murmur.yaml with the fix (E-MAN-025)', async () => {
    const e = await stageErr(capsuleWith(`${reg.host}/tools/crashy:1.0.0`));
    expect(e.code).toBe('E-MAN-025');
    expect(e.message).toMatch(/is not pinned by digest/);
  });
});

describe('in a pod: the OCI artifact mounted as an image volume', () => {
  it('is read from $MURMUR_OCI_MOUNT_DIR/<name>/ (as the operator mounts it) and no registry request is made', async () => {
    const mount = tmp('oci-mount-');
    mkdirSync(path.join(mount, 'crashy'));
    copyFileSync(wasm, path.join(mount, 'crashy', 'crashy.wasm'));
    // A registry that does not exist: only the mount can serve this.
    const dir = capsuleWith(`127.0.0.1:9/tools/crashy:1.0.0@sha256:${'1'.repeat(64)}`);
    process.env.MURMUR_OCI_MOUNT_DIR = mount;
    try {
      const staged = await stageCapsule({ capsuleDir: dir, registryDir: tmp('reg-'), workRoot: tmp('work-'), cacheDir: tmp('cache-') });
      expect(readFileSync(staged.artifacts[0]!.wasmPath!).equals(readFileSync(wasm))).toBe(true);
    } finally {
      delete process.env.MURMUR_OCI_MOUNT_DIR;
    }
  });
});

describe('mur pull and mur publish --oci', () => {
  it('mur publish --oci pushes a Wasm artifact that oras reads back byte for byte; mur pull installs it into a capsule and pins it', async () => {
    const art = tmp('art-');
    writeFileSync(path.join(art, 'murmur.yaml'), 'name: crashy\nversion: 2.0.0\nruntime: tool\n');
    copyFileSync(wasm, path.join(art, 'crashy.wasm'));
    const p = await mur(['publish', art, '--oci', `${reg.host}/mur/crashy`]);
    expect(p.code, p.err).toBe(0);
    const pinned = /pushed crashy 2\.0\.0 to (\S+)/.exec(p.out)![1]!;
    expect(pinned).toMatch(new RegExp(`^${reg.host.replace(/\./g, '\\.')}/mur/crashy:2\\.0\\.0@sha256:[0-9a-f]{64}$`));
    const back = tmp('oras-pull-');
    await oras(['pull', '--plain-http', pinned], back);
    const pulledFile = readdirSync(back).find((f) => f.endsWith('.wasm'))!;
    expect(readFileSync(path.join(back, pulledFile)).equals(readFileSync(wasm))).toBe(true);

    const capsule = tmp('caps-');
    writeFileSync(path.join(capsule, 'murmur.yaml'), 'name: c\nversion: 1.0.0\nartifacts:\n  - {name: crashy, version: 2.0.0}\n');
    const pull = await mur(['pull', pinned, '--capsule', capsule]);
    expect(pull.code, pull.err).toBe(0);
    expect(readLock(capsule)!.artifacts).toMatchObject([{ name: 'crashy', version: '2.0.0' }]);
    const staged = await stageCapsule({ capsuleDir: capsule, registryDir: path.join(capsule, 'registry'), workRoot: tmp('work-') });
    expect(readFileSync(staged.artifacts[0]!.wasmPath!).equals(readFileSync(wasm))).toBe(true);
  });
});
