/**
 * The count-only encoder's rank tables (bpe-count.ts) as one file, so they are built once per
 * machine or volume rather than once per process, and a serving process can let go of them while
 * it idles and read them back in milliseconds (tokens.ts): building them parses 1 MiB of base64
 * ranks (≈ 0.1–0.5 s in a worker thread), reading this file is one 3.9 MiB read and a digest.
 *
 * Layout (integers in the machine's byte order, which the header records; a file from a machine of
 * the other order is refused, never misread):
 *   0   8 bytes  magic "MURBPE1\n"
 *   8   u32      0x01020304 (byte order), format version, bits, maxLen,
 *               lengths (elements) of pair, single, slots, offsets, pool
 *   44  4 bytes  zero
 *   48  32 bytes SHA-256 of everything from byte 80 to the end
 *   80  pair, single, slots, offsets (int32 each), pool (bytes)
 * Every length is checked against the layout the builder makes (bpe-tables.ts) and the file's
 * size, and the digest against the content: a torn, truncated or foreign file reads as "no
 * tables" (the caller builds them again) and is never used.
 *
 * Read, the file is mapped (the native addon's mapFile) and the tables are views of its pages, not
 * copies: ≈ 4 MiB that a copy made private memory of every serving process (the whole time a
 * task counts, and the read buffer until a major GC: 4.4–8.3 MiB measured on the image in the
 * seconds after a task) are the page cache's instead, shared by every capsule of the image on a
 * node (`/opt/murmur/tokens`). Without the addon the file is read and copied into shared memory.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { nativeAddon } from '../native-addon.ts';
import { cacheRoot, seedRoots } from '../wit/packages.ts';
import type { Cl100kTables } from './bpe-count.ts';

/** Bumped whenever bpe-tables.ts lays the tables out differently: an older file is then not read. */
export const TABLE_FORMAT = 1;
const MAGIC = Buffer.from('MURBPE1\n', 'latin1');
const ORDER = 0x01020304;
const HEADER = 80;
const TABLES_NAME = `cl100k_base.v${TABLE_FORMAT}.tables`;

/**
 * Where the tables are kept: `tokens/cl100k_base.v<format>.tables` beside the component cache
 * (MURMUR_COMPONENT_CACHE's parent: /var/lib/murmur/cache in the runtime image, the pod's volume),
 * else under the checkout's .cache/.
 */
export function tablesFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), 'tokens', TABLES_NAME);
}

/**
 * Read-only tables made ahead of time, read when the writable file is not there yet: the same name
 * under each seed root (runtime/wit/packages.ts; /opt/murmur/tokens in the runtime image, made by
 * its build), so a pod's first count reads them instead of building them in a worker. A seed of
 * another format has another name and is never found; a damaged one is refused like any file.
 */
export function seedTablesFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  return seedRoots(env).map((r) => join(r, 'tokens', TABLES_NAME));
}

/** The file's bytes for built tables. */
export function encodeTables(t: Cl100kTables): Buffer {
  const sections = [t.pair, t.single, t.slots, t.offsets, t.pool];
  const body = Buffer.concat(sections.map((a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength)));
  const head = Buffer.alloc(HEADER);
  MAGIC.copy(head, 0);
  const u32 = new Uint32Array(head.buffer, head.byteOffset + 8, 9);
  u32.set([ORDER, TABLE_FORMAT, t.bits, t.maxLen, t.pair.length, t.single.length, t.slots.length, t.offsets.length, t.pool.length]);
  createHash('sha256').update(body).digest().copy(head, 48);
  return Buffer.concat([head, body]);
}

interface Header {
  bits: number;
  maxLen: number;
  lengths: [pair: number, single: number, slots: number, offsets: number, pool: number];
}

/** The header of a file of `size` bytes, checked against the layout and the size; or why it is refused. */
function parseHeader(head: Buffer, size: number): Header | string {
  if (head.length < HEADER) return `${size} bytes: shorter than the header`;
  if (!head.subarray(0, 8).equals(MAGIC)) return 'not a rank-table file (magic)';
  // Read in the machine's own order, as written: a file of the other order shows a swapped marker.
  const h = new Uint32Array(new Uint8Array(head.subarray(8, 44)).buffer);
  if (h[0] !== ORDER) return 'written on a machine of the other byte order';
  const [, format, bits, maxLen, nPair, nSingle, nSlots, nOffsets, nPool] = [...h];
  if (format !== TABLE_FORMAT) return `format ${format}, this build reads ${TABLE_FORMAT}`;
  if (!(bits! >= 8 && bits! <= 24) || !(maxLen! >= 3 && maxLen! <= 255)) return `bits ${bits} / maxLen ${maxLen} out of range`;
  if (nPair !== 65536 || nSingle !== 256 || nSlots !== 2 << bits! || nOffsets !== 1 << bits!) return 'section lengths do not match the layout';
  const want = HEADER + 4 * (nPair + nSingle + nSlots + nOffsets) + nPool!;
  if (size !== want) return `${size} bytes where the header says ${want}`;
  return { bits: bits!, maxLen: maxLen!, lengths: [nPair, nSingle, nSlots, nOffsets, nPool!] };
}

/**
 * Whether `file` looks whole (its header read and checked against its size, the content not
 * hashed): what a counter checks before letting go of tables it means to read back. Undefined, or why not.
 */
export function checkTablesFile(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(HEADER);
    const n = readSync(fd, head, 0, HEADER, 0);
    const h = parseHeader(head.subarray(0, n), fstatSync(fd).size);
    return typeof h === 'string' ? h : undefined;
  } catch (e) {
    return (e as Error).message;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Why `bytes` are not tables this build can use, or the tables: copies in shared memory, as the
 * builder makes them, or with `inPlace` views of `bytes` (a mapped file; its offset a multiple of 4).
 */
export function decodeTables(bytes: Uint8Array, inPlace = false): Cl100kTables | string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const h = parseHeader(buf.subarray(0, HEADER), bytes.length);
  if (typeof h === 'string') return h;
  const [nPair, nSingle, nSlots, nOffsets, nPool] = h.lengths;
  const body = buf.subarray(HEADER);
  if (!createHash('sha256').update(body).digest().equals(buf.subarray(48, 80))) return 'content does not match its digest';
  let at = HEADER;
  const ints = (n: number): Int32Array => {
    if (inPlace) {
      at += 4 * n;
      return new Int32Array(bytes.buffer, bytes.byteOffset + at - 4 * n, n);
    }
    const out = new Int32Array(new SharedArrayBuffer(4 * n));
    new Uint8Array(out.buffer).set(bytes.subarray(at, at + 4 * n));
    at += 4 * n;
    return out;
  };
  const pair = ints(nPair);
  const single = ints(nSingle);
  const slots = ints(nSlots);
  const offsets = ints(nOffsets);
  const pool = inPlace ? bytes.subarray(at, at + nPool) : new Uint8Array(new SharedArrayBuffer(nPool));
  if (!inPlace) pool.set(bytes.subarray(at, at + nPool));
  return { pair, single, slots, offsets, pool, maxLen: h.maxLen, bits: h.bits };
}

/**
 * The tables in `file`, or why not (missing, unreadable, refused by {@link decodeTables}): views
 * of the mapped file where the native addon maps it, else copies of a read.
 */
export function readTablesFile(file: string): Cl100kTables | string {
  const mapped = nativeAddon()?.mapFile?.(file);
  if (mapped) return decodeTables(new Uint8Array(mapped), true);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `unreadable: ${(e as Error).message}`;
  }
  return decodeTables(bytes);
}

/**
 * Writes `file` whole or not at all (a temporary file renamed into place), its folder made if
 * needed. Returns why it could not (a read-only volume, say): the caller then keeps its tables.
 */
export function writeTablesFile(file: string, t: Cl100kTables): string | undefined {
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(tmp, encodeTables(t));
    renameSync(tmp, file);
    return undefined;
  } catch (e) {
    try {
      rmSync(tmp, { force: true });
    } catch {
      /* its folder could not be made: nothing was written */
    }
    return (e as Error).message;
  }
}
