import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MurError } from '../../runtime/errors.ts';
import { DATA_PATH_MAX_BYTES, resolveDataPath, toolResultPayload } from '../../runtime/tools/data-path.ts';

let root: string;
let workdir: string;

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(MurError);
    return (e as MurError).code;
  }
  throw new Error('expected a failure');
}

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'datapath-'));
  workdir = path.join(root, 'workdir');
  await mkdir(path.join(workdir, 'out', 'deep'), { recursive: true });
  await writeFile(path.join(workdir, 'out', 'result.json'), '{"ok":true}');
  await writeFile(path.join(workdir, 'out', 'deep', 'a b.txt'), 'spaced');
  await writeFile(path.join(root, 'secret.txt'), 'outside');
  await writeFile(path.join(workdir, 'inside.txt'), 'inside');
  await symlink(path.join(root, 'secret.txt'), path.join(workdir, 'out', 'link-out'));
  await symlink(path.join(workdir, 'inside.txt'), path.join(workdir, 'out', 'link-in'));
  await symlink(path.join(workdir, 'out', 'deep'), path.join(workdir, 'dirlink'));
  await writeFile(path.join(workdir, 'big.bin'), '');
  await truncate(path.join(workdir, 'big.bin'), DATA_PATH_MAX_BYTES + 1);
  await writeFile(path.join(workdir, 'exact.bin'), '');
  await truncate(path.join(workdir, 'exact.bin'), DATA_PATH_MAX_BYTES);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('data-path (wit-interfaces.md "Returning a large result", six rows)', () => {
  it('row 1: a regular file under the session workdir → its contents become the result', async () => {
    expect(await resolveDataPath(workdir, 'out/result.json')).toBe('{"ok":true}');
    expect(await resolveDataPath(workdir, './out//result.json')).toBe('{"ok":true}');
    expect(await resolveDataPath(workdir, 'out/deep/a b.txt')).toBe('spaced');
  });

  it('row 2: an absolute path, or one climbing out with .. → the call fails', async () => {
    expect(await code(resolveDataPath(workdir, path.join(workdir, 'inside.txt')))).toBe('E-TOOL-011');
    expect(await code(resolveDataPath(workdir, '/etc/passwd'))).toBe('E-TOOL-011');
    expect(await code(resolveDataPath(workdir, '../secret.txt'))).toBe('E-TOOL-012');
    expect(await code(resolveDataPath(workdir, 'out/../../secret.txt'))).toBe('E-TOOL-012');
    expect(await code(resolveDataPath(workdir, 'out/../inside.txt'))).toBe('E-TOOL-012');
    expect(await code(resolveDataPath(workdir, '..\\secret.txt'))).toBe('E-TOOL-012');
  });

  it('row 3: a path passing through a symlink, wherever it points → the call fails', async () => {
    expect(await code(resolveDataPath(workdir, 'out/link-out'))).toBe('E-TOOL-013');
    expect(await code(resolveDataPath(workdir, 'out/link-in'))).toBe('E-TOOL-013'); // points inside: still refused
    expect(await code(resolveDataPath(workdir, 'dirlink/a b.txt'))).toBe('E-TOOL-013'); // intermediate component
  });

  it('row 4: a file that does not exist → the call fails', async () => {
    expect(await code(resolveDataPath(workdir, 'out/missing.json'))).toBe('E-TOOL-014');
    expect(await code(resolveDataPath(workdir, 'nodir/x'))).toBe('E-TOOL-014');
    expect(await code(resolveDataPath(workdir, 'inside.txt/x'))).toBe('E-TOOL-014');
  });

  it('row 5: a file over 10 MiB → the call fails (exactly 10 MiB is accepted)', async () => {
    expect(await code(resolveDataPath(workdir, 'big.bin'))).toBe('E-TOOL-015');
    expect((await resolveDataPath(workdir, 'exact.bin')).length).toBe(DATA_PATH_MAX_BYTES);
  });

  it('row 6: % escapes are decoded before resolving, so %2e%2e fails like ..', async () => {
    expect(await code(resolveDataPath(workdir, '%2e%2e/secret.txt'))).toBe('E-TOOL-012');
    expect(await code(resolveDataPath(workdir, 'out%2F%2E%2E%2F%2E%2E%2Fsecret.txt'))).toBe('E-TOOL-012');
    expect(await code(resolveDataPath(workdir, '%2Fetc%2Fpasswd'))).toBe('E-TOOL-011');
    expect(await resolveDataPath(workdir, 'out/deep/a%20b.txt')).toBe('spaced');
    expect(await code(resolveDataPath(workdir, 'out/%zz'))).toBe('E-TOOL-010');
    expect(await code(resolveDataPath(workdir, 'out/x%00.txt'))).toBe('E-TOOL-010');
  });

  it('a directory is not a regular file', async () => {
    expect(await code(resolveDataPath(workdir, 'out'))).toBe('E-TOOL-016');
    expect(await code(resolveDataPath(workdir, '.'))).toBe('E-TOOL-016');
  });

  it('a result carrying data uses it verbatim and never opens data-path', async () => {
    expect(await toolResultPayload(workdir, { data: 'inline', dataPath: '../secret.txt' })).toBe('inline');
    expect(await toolResultPayload(workdir, { data: '', dataPath: 'out/result.json' })).toBe('');
    expect(await toolResultPayload(workdir, { dataPath: 'out/result.json' })).toBe('{"ok":true}');
    expect(await toolResultPayload(workdir, {})).toBeUndefined();
  });

  it('a tool with no filesystem grant has no directory to name: its data-path fails (E-TOOL-017), its data still works', async () => {
    await expect(toolResultPayload(undefined, { dataPath: 'out/result.json' })).rejects.toMatchObject({ code: 'E-TOOL-017' });
    expect(await toolResultPayload(undefined, { data: 'inline', dataPath: 'x' })).toBe('inline');
  });

  it('failure messages name the data-path and say how to fix it', async () => {
    const e = await resolveDataPath(workdir, 'out/link-out').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(MurError); // it must fail: a symlink out of the workdir
    expect((e as MurError).message).toContain('"out/link-out"');
    expect((e as MurError).message).toMatch(/symlink/);
    expect((e as MurError).hint).toBeTruthy();
  });
});
