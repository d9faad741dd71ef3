import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MurErrorList } from '../../runtime/manifest/errors.ts';
import { sha256Hex } from '../../runtime/contracts/digest.ts';
import { readLock } from '../../runtime/registry/lock.ts';
import { stageCapsule } from '../../runtime/session/stage.ts';
import { artifactYaml, fakeComponent, makeCapsule, read, tmp, tree } from './helpers.ts';

const files = new Map<string, Buffer>();
const hits = new Map<string, number>();
let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    hits.set(url, (hits.get(url) ?? 0) + 1);
    const body = files.get(url);
    if (!body) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function tarOf(entries: Record<string, string | Buffer>, gzip = false): Buffer {
  const dir = tmp('mur-tar-');
  for (const [n, b] of Object.entries(entries)) writeFileSync(path.join(dir, n), b);
  const out = path.join(tmp('mur-tarout-'), gzip ? 'a.tar.gz' : 'a.tar');
  execFileSync('tar', [gzip ? '-czf' : '-cf', out, '-C', dir, ...Object.keys(entries)]);
  return readFileSync(out);
}

const capsule = (entries: string) => `name: remote-demo\nversion: 1.0.0\nartifacts:\n${entries}`;

describe('remote artifacts (real HTTP on 127.0.0.1)', () => {
  it('a bare .wasm: fetched, verified, cached by sha256, staged and pinned with its source', async () => {
    const wasm = fakeComponent('remote-echo');
    files.set('/echo.wasm', wasm);
    const sha = sha256Hex(wasm);
    const caps = makeCapsule(capsule(`  - name: echo\n    source:\n      url: ${base}/echo.wasm\n      sha256: ${sha}\n`));
    const cache = tmp('mur-cache-');
    const root = tmp();
    const s = await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: root, cacheDir: cache });
    const a = s.artifacts[0]!;
    expect(a).toMatchObject({ name: 'echo', version: 'remote', runtime: 'tool', origin: 'remote', source: { url: `${base}/echo.wasm`, sha256: sha } });
    expect(readFileSync(a.wasmPath!)).toEqual(wasm);
    expect(tree(cache)).toEqual([`${sha}/`, `${sha}/echo/`, `${sha}/echo/artifact.json`, `${sha}/echo/echo.wasm`, `${sha}/echo/murmur.yaml`]);
    expect(readLock(caps)!.artifacts).toEqual([{ name: 'echo', version: 'remote', sha256: a.sha256, source: { url: `${base}/echo.wasm`, sha256: sha } }]);
    expect(hits.get('/echo.wasm')).toBe(1);

    // Second stage: served from the cache (no request), re-verified from disk.
    await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: root, cacheDir: cache });
    expect(hits.get('/echo.wasm')).toBe(1);
  });

  it('a tar.gz bundle carries its own manifest (a hook with its contract)', async () => {
    const wasm = fakeComponent('remote-hook');
    const bundle = tarOf(
      {
        'murmur.yaml': artifactYaml({ name: 'watch', version: '3.0.0', runtime: 'hook', extra: 'binding: on-tool-call\ncommit_policy: deny\n' }),
        'component.wasm': wasm,
      },
      true,
    );
    files.set('/watch.tar.gz', bundle);
    const caps = makeCapsule(capsule(`  - name: watch\n    runtime: hook\n    source: {url: "${base}/watch.tar.gz", sha256: ${sha256Hex(bundle)}}\n`));
    const s = await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: tmp('mur-cache-') });
    expect(s.artifacts[0]).toMatchObject({ name: 'watch', version: '3.0.0', runtime: 'hook' });
    expect(s.hooks[0]).toMatchObject({ name: 'watch', binding: 'on-tool-call', commitPolicy: 'deny' });
    expect(readFileSync(s.hooks[0]!.wasmPath)).toEqual(wasm);
  });

  it('a plain tar bundle whose hook contract is invalid is refused with the contract error', async () => {
    const bundle = tarOf({
      'murmur.yaml': artifactYaml({ name: 'bad', version: '1.0.0', runtime: 'hook', extra: 'binding: on-stage\nexecution_mode: async\n' }),
      'bad.wasm': fakeComponent('bad'),
    });
    files.set('/bad.tar', bundle);
    const caps = makeCapsule(capsule(`  - name: bad\n    runtime: hook\n    source: {url: "${base}/bad.tar", sha256: ${sha256Hex(bundle)}}\n`));
    const root = tmp();
    const err = await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: root, cacheDir: tmp('mur-cache-') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MurErrorList);
    expect((err as MurErrorList).codes()).toEqual(['E-MAN-020']);
    expect((err as MurErrorList).errors[0]!.message).toContain("execution_mode 'async' is not valid for binding 'on-stage'");
    expect(tree(root)).toEqual([]);
  });

  it('a bare .wasm hook takes its contract from the capsule entry: a policy hook, not an all-events observer', async () => {
    const wasm = fakeComponent('bare-guard');
    files.set('/guard.wasm', wasm);
    const sha = sha256Hex(wasm);
    const cache = tmp('mur-cache-');
    const caps = makeCapsule(
      capsule(`  - name: guard\n    runtime: hook\n    source: {url: "${base}/guard.wasm", sha256: ${sha}}\n    binding: on-shell\n    commit_policy: deny\n`),
    );
    const s = await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: cache });
    expect(s.hooks).toEqual([
      expect.objectContaining({ name: 'guard', binding: 'on-shell', handlers: ['on-shell'], executionMode: 'blocking', commitPolicy: 'deny' }),
    ]);
    // The contract is in the derived manifest itself, so the artifact digest (and murmur.lock) covers it.
    expect(read(s.artifacts[0]!.manifestPath)).toMatch(/binding: on-shell\ncommit_policy: deny\n/);

    // The same bytes under an entry without a contract: an observer, from its own cache entry (a
    // cache hit never hands back another entry's contract).
    const plain = makeCapsule(capsule(`  - name: guard\n    runtime: hook\n    source: {url: "${base}/guard.wasm", sha256: ${sha}}\n`));
    const o = await stageCapsule({ capsuleDir: plain, registryDir: tmp(), workRoot: tmp(), cacheDir: cache });
    expect(o.hooks[0]).toMatchObject({ commitPolicy: 'none', executionMode: 'blocking' });
    expect(o.hooks[0]!.binding).toBeUndefined();
    expect(o.artifacts[0]!.sha256).not.toBe(s.artifacts[0]!.sha256);
    const again = await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: cache });
    expect(again.hooks[0]).toMatchObject({ binding: 'on-shell', commitPolicy: 'deny' });
    expect(hits.get('/guard.wasm')).toBe(2);
  });

  it('E-MAN-020: a capsule entry whose hook contract breaks the commit table is refused before anything is fetched', async () => {
    files.set('/never.wasm', fakeComponent('never'));
    const caps = makeCapsule(
      capsule(
        `  - name: never\n    runtime: hook\n    source: {url: "${base}/never.wasm", sha256: ${sha256Hex(fakeComponent('never'))}}\n    binding: on-task-end\n    commit_policy: deny\n`,
      ),
    );
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: tmp('mur-cache-') }).catch(
      (e: unknown) => e,
    )) as MurErrorList;
    expect(err.codes()).toEqual(['E-MAN-020']);
    expect(err.errors[0]!.message).toBe(
      "hook contract violation in artifact 'never': commit_policy 'deny' is not valid for binding 'on-task-end'; binding 'on-task-end' honors commit_policy 'reopen-task'",
    );
    expect(err.errors[0]!.location).toMatchObject({ field: 'artifacts[0].commit_policy', line: 8 });
    expect(hits.get('/never.wasm')).toBeUndefined();
  });

  it('E-REG-017: a capsule entry that expects deny of a tar bundle whose own manifest is an observer is refused, nothing written', async () => {
    const bundle = tarOf({
      'murmur.yaml': artifactYaml({ name: 'watcher', version: '1.0.0', runtime: 'hook', extra: 'binding: on-shell\n' }),
      'component.wasm': fakeComponent('watcher'),
    });
    files.set('/watcher.tar', bundle);
    const caps = makeCapsule(
      capsule(
        `  - name: watcher\n    runtime: hook\n    source: {url: "${base}/watcher.tar", sha256: ${sha256Hex(bundle)}}\n    binding: on-shell\n    commit_policy: deny\n`,
      ),
    );
    const root = tmp();
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: root, cacheDir: tmp('mur-cache-') }).catch(
      (e: unknown) => e,
    )) as MurErrorList;
    expect(err.codes()).toEqual(['E-REG-017']);
    const e = err.errors[0]!;
    expect(e.message).toMatch(
      /^hook 'watcher': artifacts\[0\] declares commit_policy 'deny' but the artifact's own manifest \(.*murmur\.yaml\) declares commit_policy 'none'$/,
    );
    expect(e.hint).toContain("the artifact's own murmur.yaml is the hook's contract (binding on-shell, execution_mode blocking, commit_policy none)");
    expect(e.location).toMatchObject({ field: 'artifacts[0].commit_policy' });
    expect(tree(root)).toEqual([]);
    expect(tree(caps)).toEqual(['murmur.yaml']);
  });

  it("E-REG-017: an entry declaring a weaker contract than the artifact's own (a policy hook) is refused, never a silent downgrade", async () => {
    const bundle = tarOf({
      'murmur.yaml': artifactYaml({ name: 'strict', version: '1.0.0', runtime: 'hook', extra: 'binding: on-tool-call\ncommit_policy: deny\n' }),
      'component.wasm': fakeComponent('strict'),
    });
    files.set('/strict.tar', bundle);
    // What a Hook CR without a policy renders (the CRD defaults execution_mode and commit_policy).
    const caps = makeCapsule(
      capsule(
        `  - name: strict\n    runtime: hook\n    source: {url: "${base}/strict.tar", sha256: ${sha256Hex(bundle)}}\n    execution_mode: blocking\n    commit_policy: none\n`,
      ),
    );
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: tmp('mur-cache-') }).catch(
      (e: unknown) => e,
    )) as MurErrorList;
    expect(err.codes()).toEqual(['E-REG-017']);
    expect(err.errors[0]!.message).toMatch(/declares commit_policy 'none' but the artifact's own manifest \(.*\) declares commit_policy 'deny'$/);
    // An entry repeating the artifact's own contract (or giving none) stages.
    const same = makeCapsule(
      capsule(
        `  - name: strict\n    runtime: hook\n    source: {url: "${base}/strict.tar", sha256: ${sha256Hex(bundle)}}\n    binding: on-tool-call\n    execution_mode: blocking\n    commit_policy: deny\n`,
      ),
    );
    const s = await stageCapsule({ capsuleDir: same, registryDir: tmp(), workRoot: tmp(), cacheDir: tmp('mur-cache-') });
    expect(s.hooks[0]).toMatchObject({ binding: 'on-tool-call', commitPolicy: 'deny' });
  });

  it('E-REG-008: bytes that do not match source.sha256 are refused; nothing cached, nothing written', async () => {
    files.set('/changed.wasm', fakeComponent('changed'));
    const pinned = sha256Hex(fakeComponent('original'));
    const caps = makeCapsule(capsule(`  - name: changed\n    version: 1.0.0\n    source: {url: "${base}/changed.wasm", sha256: ${pinned}}\n`));
    const cache = tmp('mur-cache-');
    const root = tmp();
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: root, cacheDir: cache }).catch((e: unknown) => e)) as MurErrorList;
    expect(err.code).toBe('E-REG-000');
    expect(err.codes()).toEqual(['E-REG-008']);
    expect(err.errors[0]!.message).toBe(
      `sha256 mismatch for remote artifact 'changed': ${base}/changed.wasm hashes to ${sha256Hex(fakeComponent('changed'))} but murmur.yaml pins ${pinned}`,
    );
    expect(tree(cache)).toEqual([]);
    expect(tree(root)).toEqual([]);
    expect(tree(caps)).toEqual(['murmur.yaml']);
  });

  it('E-REG-007: an HTTP error is refused', async () => {
    const caps = makeCapsule(capsule(`  - name: gone\n    version: 1.0.0\n    source: {url: "${base}/gone.wasm", sha256: ${'0'.repeat(64)}}\n`));
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: tmp('mur-cache-') }).catch(
      (e: unknown) => e,
    )) as MurErrorList;
    expect(err.codes()).toEqual(['E-REG-007']);
    expect(err.errors[0]!.message).toBe(`cannot fetch ${base}/gone.wasm: HTTP 404 Not Found`);
  });

  it('E-REG-009: content that is neither a component nor a bundle', async () => {
    const junk = Buffer.from('hello, not an artifact');
    files.set('/junk', junk);
    const caps = makeCapsule(capsule(`  - name: junk\n    version: 1.0.0\n    source: {url: "${base}/junk", sha256: ${sha256Hex(junk)}}\n`));
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: tmp('mur-cache-') }).catch(
      (e: unknown) => e,
    )) as MurErrorList;
    expect(err.codes()).toEqual(['E-REG-009']);
  });

  it('a tampered cache entry is caught on the next stage (E-REG-002)', async () => {
    const wasm = fakeComponent('cached');
    files.set('/cached.wasm', wasm);
    const sha = sha256Hex(wasm);
    const caps = makeCapsule(capsule(`  - name: cached\n    version: 1.0.0\n    source: {url: "${base}/cached.wasm", sha256: ${sha}}\n`));
    const cache = tmp('mur-cache-');
    await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: cache });
    mkdirSync(path.join(cache, sha, 'cached'), { recursive: true });
    writeFileSync(path.join(cache, sha, 'cached', 'cached.wasm'), fakeComponent('evil'));
    const err = (await stageCapsule({ capsuleDir: caps, registryDir: tmp(), workRoot: tmp(), cacheDir: cache }).catch((e: unknown) => e)) as MurErrorList;
    expect(err.codes()).toEqual(['E-REG-002']);
    expect(err.errors[0]!.hint).toContain('delete');
  });
});
