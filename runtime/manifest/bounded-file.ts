/**
 * The one way a capsule's files are read: murmur.yaml (capsule and artifact) and the system prompt
 * files it names. Only a regular file within its size bound is read. A FIFO would block the open
 * until some writer appears and a device such as /dev/zero never ends, so `mur run` hung silently
 * on either; a runaway file was read whole into memory before anything looked at it.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { MurError, type ErrorLocation } from '../errors.ts';
import type { Problem } from './checks.ts';
import { MAX_MANIFEST_BYTES, MAX_SYSTEM_PROMPT_BYTES } from './schema.ts';

/** What is read and how much of it may be: the size limit and the code and hint past it. */
export interface FileBound {
  /** Names the file in messages: `capsule manifest /c/murmur.yaml`, `system_prompt_file 'p.md' (/c/p.md)`. */
  what: string;
  limit: number;
  /** The code of a file over `limit` (E-MAN-031 a manifest, E-MAN-032 a system prompt). */
  tooLargeCode: string;
  tooLargeHint: string;
}

/** murmur.yaml of a capsule (`kind` capsule) or of an artifact. */
export function manifestBound(kind: 'capsule' | 'artifact', file: string): FileBound {
  return {
    what: `${kind} manifest ${file}`,
    limit: MAX_MANIFEST_BYTES,
    tooLargeCode: 'E-MAN-031',
    tooLargeHint: 'a manifest is a few KiB: keep long text such as a system prompt in a file of the capsule folder named by `inference.system_prompt_file`',
  };
}

/** The file a `system_prompt_file` field names, `rel` as written and `file` resolved. */
export function promptFileBound(rel: string, file: string): FileBound {
  return {
    what: `system_prompt_file '${rel}' (${file})`,
    limit: MAX_SYSTEM_PROMPT_BYTES,
    tooLargeCode: 'E-MAN-032',
    tooLargeHint: 'shorten the prompt; it is sent with every turn',
  };
}

/** `1048576 bytes (1 MiB)`: the limit as messages and the docs state it. */
function describeLimit(bytes: number): string {
  const mib = bytes / 2 ** 20;
  return Number.isInteger(mib) ? `${bytes} bytes (${mib} MiB)` : `${bytes} bytes (${bytes / 1024} KiB)`;
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a file';
}

/** The problem with a file of this kind and size, if any (E-MAN-030 or the bound's code). */
function problemOf(st: Stats, bound: FileBound, size: number = st.size): Problem | undefined {
  if (!st.isFile()) {
    return {
      code: 'E-MAN-030',
      message: `${bound.what} is ${kindOf(st)}, not a regular file`,
      hint: 'give a regular file: a FIFO or a device is never read (it could block the runtime or never end)',
    };
  }
  if (size > bound.limit) {
    return { code: bound.tooLargeCode, message: `${bound.what} is ${size} bytes, over the limit of ${describeLimit(bound.limit)}`, hint: bound.tooLargeHint };
  }
  return undefined;
}

/**
 * The file's text. Throws a MurError (E-MAN-030, or the bound's code) located at `location` (default:
 * the file itself) when it is not a regular file or is over the bound; an error opening it (ENOENT,
 * EACCES) is thrown as it is, for the caller to say what was missing.
 */
export function readBoundedFile(file: string, bound: FileBound, location: ErrorLocation = { file }): string {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer; the
  // fstat of the opened descriptor then refuses it (and a file swapped after a stat cannot slip in).
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const st = fstatSync(fd);
    const refused = problemOf(st, bound);
    if (refused) throw new MurError(refused.code, refused.message, { hint: refused.hint, location });
    // Read to the end, at most one byte past the bound: a file that grew after the fstat is
    // refused too, never cut short and never read whole.
    const buf = Buffer.allocUnsafe(bound.limit + 1);
    let n = 0;
    while (n < buf.length) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
    }
    if (n > bound.limit) {
      const over = problemOf(st, bound, n)!;
      throw new MurError(over.code, over.message, { hint: over.hint, location });
    }
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * Validation's look at a named file, without opening it (a stat never blocks): undefined when it is
 * a regular file within the bound, `missing` when there is nothing there, else the problem.
 */
export function checkBoundedFile(file: string, bound: FileBound): Problem | 'missing' | undefined {
  let st: Stats;
  try {
    st = statSync(file);
  } catch {
    return 'missing';
  }
  return problemOf(st, bound);
}
