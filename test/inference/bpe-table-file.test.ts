/**
 * The rank-table file (runtime/inference/bpe-table-file.ts): tables read back from it count exactly
 * as freshly built ones, and a file that is torn, truncated, altered or foreign is refused with the
 * reason — never read as tables.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cl100kCounter, type Cl100kTables } from '../../runtime/inference/bpe-count.ts';
import { buildCl100kTables } from '../../runtime/inference/bpe-tables.ts';
import {
  TABLE_FORMAT,
  checkTablesFile,
  decodeTables,
  encodeTables,
  readTablesFile,
  tablesFile,
  writeTablesFile,
} from '../../runtime/inference/bpe-table-file.ts';
import { countChunked } from '../../runtime/inference/chunk.ts';
import { tmp } from '../loop/kit.ts';
import recorded from './token-counts.json' with { type: 'json' };
import { tokenInputs } from './token-inputs.ts';

let built: Cl100kTables;
let bytes: Buffer;
beforeAll(() => {
  built = buildCl100kTables();
  bytes = encodeTables(built);
});

/** A copy of the file's bytes with `edit` applied. */
function edited(edit: (b: Buffer) => void): Buffer {
  const b = Buffer.from(bytes);
  edit(b);
  return b;
}

describe('the rank-table file', () => {
  it('reads back tables that count exactly the recorded counts, in shared memory', () => {
    const t = decodeTables(bytes);
    if (typeof t === 'string') throw new Error(t);
    expect(t.slots).toEqual(built.slots);
    expect(t.pool).toEqual(built.pool);
    expect({ bits: t.bits, maxLen: t.maxLen }).toEqual({ bits: built.bits, maxLen: built.maxLen });
    for (const a of [t.pair, t.single, t.slots, t.offsets, t.pool]) expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
    const counter = cl100kCounter(t);
    const inputs = tokenInputs();
    const counts = Object.fromEntries(Object.keys(recorded).map((k) => [k, countChunked(inputs[k]!, {}, (c) => counter.count(c))]));
    expect(counts).toEqual(recorded);
  });

  it("reads a file's tables as views of its mapped pages, not as copies, and they count the recorded counts", () => {
    const file = join(tmp('bpe-map-'), `cl100k_base.v${TABLE_FORMAT}.tables`);
    expect(writeTablesFile(file, built)).toBeUndefined();
    const t = readTablesFile(file);
    if (typeof t === 'string') throw new Error(t);
    // Mapped: the file is among the process's mappings, and every table is a view of that one buffer.
    expect(readFileSync('/proc/self/maps', 'utf8')).toContain(file);
    for (const a of [t.pair, t.single, t.slots, t.offsets, t.pool]) {
      expect(a.buffer).toBe(t.pair.buffer);
      expect(a.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    }
    expect(t.pair.buffer.byteLength).toBe(bytes.length);
    const counter = cl100kCounter(t);
    const inputs = tokenInputs();
    expect(Object.fromEntries(Object.keys(recorded).map((k) => [k, countChunked(inputs[k]!, {}, (c) => counter.count(c))]))).toEqual(recorded);
  });

  it.each([
    ['a truncated file', () => bytes.subarray(0, bytes.length - 1), /bytes where the header says/],
    ['a file shorter than its header', () => bytes.subarray(0, 40), /shorter than the header/],
    ['a changed byte in the tables', () => edited((b) => (b[b.length - 100]! ^= 1)), /does not match its digest/],
    ['another file altogether', () => edited((b) => b.write('PNG', 1, 'latin1')), /not a rank-table file/],
    [
      'another format version',
      () => edited((b) => b.writeUInt32LE(TABLE_FORMAT + 1, 12)),
      new RegExp(`format ${TABLE_FORMAT + 1}, this build reads ${TABLE_FORMAT}`),
    ],
    ['a file written in the other byte order', () => edited((b) => b.writeUInt32BE(0x01020304, 8)), /other byte order/],
    ['section lengths that do not fit the layout', () => edited((b) => b.writeUInt32LE(65535, 24)), /section lengths/],
  ])('refuses %s, saying why', (_what, make, why) => {
    expect(decodeTables(make())).toMatch(why);
  });

  it('is written whole (nothing half-written left beside it) and checked by its header without reading it all', () => {
    const dir = tmp('bpe-file-');
    const file = join(dir, 'tokens', `cl100k_base.v${TABLE_FORMAT}.tables`);
    expect(checkTablesFile(file)).toMatch(/ENOENT/);
    expect(readTablesFile(file)).toBe('no such file');
    expect(writeTablesFile(file, built)).toBeUndefined();
    expect(readdirSync(join(dir, 'tokens'))).toEqual([`cl100k_base.v${TABLE_FORMAT}.tables`]);
    expect(checkTablesFile(file)).toBeUndefined();
    expect(readFileSync(file).equals(bytes)).toBe(true);
    writeFileSync(file, bytes.subarray(0, 1000));
    expect(checkTablesFile(file)).toMatch(/1000 bytes where the header says/);
  });

  it('says why it could not write where no folder can be made, and leaves nothing there', () => {
    const dir = tmp('bpe-blocked-');
    // A file where the folder would be stands in for a read-only volume (the tests run as root).
    writeFileSync(join(dir, 'blocked'), '');
    const file = join(dir, 'blocked', 'tokens', 'x.tables');
    expect(writeTablesFile(file, built)).toMatch(/EEXIST|ENOTDIR|EACCES|EROFS/);
    expect(readdirSync(dir)).toEqual(['blocked']);
  });

  it('lives beside the component cache (the pod volume in the image), else under the checkout’s .cache', () => {
    expect(tablesFile({ MURMUR_COMPONENT_CACHE: '/var/lib/murmur/cache/components' })).toBe(`/var/lib/murmur/cache/tokens/cl100k_base.v${TABLE_FORMAT}.tables`);
    expect(tablesFile({})).toMatch(new RegExp(`/\\.cache/tokens/cl100k_base\\.v${TABLE_FORMAT}\\.tables$`));
  });
});
