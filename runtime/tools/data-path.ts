/**
 * Reading a tool's `data-path` on its behalf (wit-interfaces.md "Returning a large result"):
 *
 * | `data-path` names                                   | Outcome                                   |
 * |-----------------------------------------------------|-------------------------------------------|
 * | a regular file under the session workdir            | its contents become the result            |
 * | an absolute path, or one climbing out with `..`     | the call fails (E-TOOL-011 / E-TOOL-012)  |
 * | a path through a symlink, wherever it points        | the call fails (E-TOOL-013)               |
 * | a file that does not exist                          | the call fails (E-TOOL-014)               |
 * | a file over 10 MiB                                  | the call fails (E-TOOL-015)               |
 * | a path holding `%` escapes                          | decoded first: `%2e%2e` fails like `..`   |
 *
 * and a result carrying `data` uses it verbatim and never opens `data-path` (`toolResultPayload`).
 *
 * Rules applied, in order: `%` escapes decoded once (a malformed escape or a NUL fails,
 * E-TOOL-010); absolute (`/x`, `\x`, `C:`) fails; any `..` component fails (even one that would
 * come back inside); `\` counts as a separator. Then every component is `lstat`ed from the workdir
 * down: a symlink anywhere fails, a missing one fails, the last must be a regular file
 * (E-TOOL-016 otherwise) of at most 10 MiB. The file is opened with O_NOFOLLOW, `fstat`ed and
 * compared (dev/inode) with the walk, and at most 10 MiB + 1 bytes are read, so a swap or growth
 * between the checks and the read is caught too. The workdir itself is trusted as given.
 */
import { constants as fsc, type Stats } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import path from 'node:path';
import { MurError } from '../errors.ts';
import type { ToolResult } from './result.ts';

export const DATA_PATH_MAX_BYTES = 10 * 1024 * 1024;

function fail(code: string, dataPath: string, why: string, hint: string): MurError {
  return new MurError(code, `data-path ${JSON.stringify(dataPath)} ${why}`, { hint, location: { field: 'data-path' } });
}

/** The components of `dataPath` after decoding, or a typed failure. Pure; no filesystem access. */
export function dataPathComponents(dataPath: string): string[] {
  let decoded: string;
  try {
    decoded = decodeURIComponent(dataPath);
  } catch {
    throw fail('E-TOOL-010', dataPath, 'holds a malformed % escape', 'escape a literal % as %25, or avoid % in file names');
  }
  if (decoded === '' || decoded.includes('\0')) {
    throw fail('E-TOOL-010', dataPath, decoded === '' ? 'is empty' : 'holds a NUL byte', 'name a file relative to the session workdir');
  }
  if (decoded.startsWith('/') || decoded.startsWith('\\') || /^[A-Za-z]:/.test(decoded) || path.isAbsolute(decoded)) {
    throw fail('E-TOOL-011', dataPath, 'is an absolute path', 'name the file relative to the session workdir, e.g. out/result.json');
  }
  const parts = decoded.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) {
    throw fail('E-TOOL-012', dataPath, 'climbs out with ".."', 'name a file beneath the session workdir, without ".." components');
  }
  if (parts.length === 0) throw fail('E-TOOL-016', dataPath, 'names the workdir itself, not a file', 'name a regular file beneath the session workdir');
  return parts;
}

/** The contents of the regular file `dataPath` names under `workdir`, or a typed failure. */
export async function resolveDataPath(workdir: string, dataPath: string): Promise<string> {
  const parts = dataPathComponents(dataPath);
  const root = path.resolve(workdir);
  let cur = root;
  const seen: { dev: number; ino: number }[] = [];
  let last: Awaited<ReturnType<typeof lstat>> | undefined;
  for (let i = 0; i < parts.length; i++) {
    cur = path.join(cur, parts[i]!);
    let st: Stats;
    try {
      st = await lstat(cur);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        throw fail('E-TOOL-014', dataPath, 'names a file that does not exist', 'write the file before returning its name, relative to the session workdir');
      }
      throw fail('E-TOOL-014', dataPath, `cannot be read: ${(e as Error).message}`, 'write a readable regular file under the session workdir');
    }
    if (st.isSymbolicLink()) {
      throw fail(
        'E-TOOL-013',
        dataPath,
        `passes through a symlink (${parts.slice(0, i + 1).join('/')})`,
        'write the result to a regular file; symlinks are refused wherever they point',
      );
    }
    const isLast = i === parts.length - 1;
    if (!isLast && !st.isDirectory()) {
      throw fail('E-TOOL-014', dataPath, 'names a file that does not exist', 'write the file before returning its name, relative to the session workdir');
    }
    seen.push({ dev: st.dev, ino: st.ino });
    last = st;
  }
  if (!last!.isFile()) {
    throw fail('E-TOOL-016', dataPath, 'is not a regular file', 'return the name of a regular file, not a directory, socket or device');
  }
  if (last!.size > DATA_PATH_MAX_BYTES) {
    throw fail(
      'E-TOOL-015',
      dataPath,
      `is ${last!.size} bytes, over the 10 MiB (${DATA_PATH_MAX_BYTES} bytes) limit`,
      'return less output, or split it across calls',
    );
  }
  const fh = await open(cur, fsc.O_RDONLY | fsc.O_NOFOLLOW).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ELOOP')
      throw fail('E-TOOL-013', dataPath, 'passes through a symlink', 'write the result to a regular file; symlinks are refused wherever they point');
    throw fail('E-TOOL-014', dataPath, `cannot be opened: ${e.message}`, 'write a readable regular file under the session workdir');
  });
  try {
    const st = await fh.stat();
    const expect = seen[seen.length - 1]!;
    if (!st.isFile() || st.dev !== expect.dev || st.ino !== expect.ino) {
      throw fail('E-TOOL-013', dataPath, 'changed while it was being read', 'do not rename or relink the result file after returning it');
    }
    const buf = Buffer.alloc(Math.min(DATA_PATH_MAX_BYTES + 1, st.size + 1));
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n > DATA_PATH_MAX_BYTES) {
      throw fail('E-TOOL-015', dataPath, `is over the 10 MiB (${DATA_PATH_MAX_BYTES} bytes) limit`, 'return less output, or split it across calls');
    }
    // Re-walk: every directory on the way must still be the one checked (no symlink swapped in).
    let again = root;
    for (let i = 0; i < parts.length - 1; i++) {
      again = path.join(again, parts[i]!);
      const s = await lstat(again).catch(() => undefined);
      if (s === undefined || s.isSymbolicLink() || s.dev !== seen[i]!.dev || s.ino !== seen[i]!.ino) {
        throw fail('E-TOOL-013', dataPath, 'changed while it was being read', 'do not rename or relink directories on the result path');
      }
    }
    return buf.subarray(0, n).toString('utf8');
  } finally {
    await fh.close();
  }
}

/**
 * The text a tool result contributes: `data` verbatim when set (even ""), and `data-path` is then
 * never opened; else the `data-path` file's contents; else `undefined`.
 */
export async function toolResultPayload(root: string | undefined, result: Pick<ToolResult, 'data' | 'dataPath'>): Promise<string | undefined> {
  if (result.data !== undefined) return result.data;
  if (result.dataPath !== undefined) {
    if (root === undefined)
      throw fail(
        'E-TOOL-017',
        result.dataPath,
        'cannot be read: the tool has no filesystem grant, so it has no directory to name a file in',
        'return the output in `data`, or grant the tool `filesystem.scope`',
      );
    return resolveDataPath(root, result.dataPath);
  }
  return undefined;
}
