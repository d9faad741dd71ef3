/**
 * The token counter's rank tables kept in a file (runtime/inference/tokens.ts, bpe-table-file.ts):
 * built once by a worker and written, read by every later counter instead of building, let go
 * while idle and read back by the next count — with the counts unchanged throughout.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenCounter, tokenTablesIdleMs } from '../../runtime/inference/tokens.ts';
import { checkTablesFile, seedTablesFiles, tablesFile } from '../../runtime/inference/bpe-table-file.ts';
import { countTokensUnchunked } from '../../runtime/inference/tokens-unchunked.ts';
import { tmp } from '../loop/kit.ts';

const text = "Idle tables come back from their file: héllo wörld, 日本語 😀 — they'll count the same. ".repeat(30);
const counters: TokenCounter[] = [];
afterEach(async () => {
  for (const c of counters.splice(0)) await c.close();
});

function counter(opts: ConstructorParameters<typeof TokenCounter>[0]): TokenCounter {
  const c = new TokenCounter(opts);
  counters.push(c);
  return c;
}

/** The next outcome of the counter's tables idle time (dropped or kept). */
function idleOutcome(): { opts: { onTablesIdle: (d: boolean) => void }; next: () => Promise<boolean> } {
  let waiters: ((d: boolean) => void)[] = [];
  return {
    opts: {
      onTablesIdle: (d) => {
        for (const w of waiters) w(d);
        waiters = [];
      },
    },
    next: () => new Promise<boolean>((r) => waiters.push(r)),
  };
}

describe('the token counter’s tables file', () => {
  it('is written by the worker that builds the tables; the next counter reads it and starts no worker', async () => {
    const file = join(tmp('tables-'), 'tokens', 'cl100k.tables');
    const first = counter({ tablesFile: file, tablesIdleMs: 0 });
    await first.ready();
    expect(first.tablesBuilt).toBe(1);
    await expect.poll(() => checkTablesFile(file)).toBeUndefined();

    const second = counter({ tablesFile: file, tablesIdleMs: 0 });
    second.prewarm();
    expect({ inline: second.countsInline, read: second.tablesRead, workers: second.workersStarted }).toEqual({ inline: true, read: 1, workers: 0 });
    expect(await second.count(text)).toBe(countTokensUnchunked(text));
    expect(second.workersStarted).toBe(0);
  });

  it('hands tables read from the file (views of its mapped pages) to the worker for a large text, which counts the same', async () => {
    const file = join(tmp('tables-'), 'cl100k.tables');
    await counter({ tablesFile: file, tablesIdleMs: 0 }).ready();
    await expect.poll(() => checkTablesFile(file)).toBeUndefined();
    const c = counter({ tablesFile: file, tablesIdleMs: 0 });
    c.prewarm();
    expect({ read: c.tablesRead, workers: c.workersStarted }).toEqual({ read: 1, workers: 0 });
    const large = text.repeat(40); // past what is counted in place: the worker counts it
    expect(await c.count(large)).toBe(countTokensUnchunked(large));
    expect({ workers: c.workersStarted, built: c.tablesBuilt }).toEqual({ workers: 1, built: 0 });
  });

  it('lets idle tables go and reads them back with the next count, which counts the same', async () => {
    const file = join(tmp('tables-'), 'cl100k.tables');
    await counter({ tablesFile: file, tablesIdleMs: 0 }).ready();
    await expect.poll(() => checkTablesFile(file)).toBeUndefined();
    const idle = idleOutcome();
    const c = counter({ tablesFile: file, tablesIdleMs: 30, ...idle.opts });
    const dropped = idle.next();
    const before = await c.count(text);
    expect(await dropped).toBe(true);
    expect({ inline: c.countsInline, dropped: c.tablesDropped }).toEqual({ inline: false, dropped: 1 });
    const again = idle.next();
    expect(await c.count(text)).toBe(before);
    expect({ read: c.tablesRead, workers: c.workersStarted, built: c.tablesBuilt }).toEqual({ read: 2, workers: 0, built: 0 });
    expect(await again).toBe(true);
  });

  it('keeps its tables when there is no sound file to read them back from', async () => {
    const dir = tmp('tables-');
    // A file in place of the folder: the worker cannot write the tables there.
    writeFileSync(join(dir, 'blocked'), '');
    const idle = idleOutcome();
    const c = counter({ tablesFile: join(dir, 'blocked', 'cl100k.tables'), tablesIdleMs: 30, idleMs: 10, ...idle.opts });
    const kept = idle.next();
    await c.ready();
    expect(await c.count(text)).toBe(countTokensUnchunked(text));
    expect(await kept).toBe(false);
    expect(c.countsInline).toBe(true);
  });

  it('builds the tables again (and rewrites the file) when the file is damaged', async () => {
    const file = join(tmp('tables-'), 'cl100k.tables');
    writeFileSync(file, 'not tables');
    const c = counter({ tablesFile: file, tablesIdleMs: 0 });
    c.prewarm();
    expect(c.tablesRead).toBe(0);
    expect(await c.count(text)).toBe(countTokensUnchunked(text));
    await c.ready();
    expect(c.tablesBuilt).toBe(1);
    await expect.poll(() => checkTablesFile(file)).toBeUndefined();
  });

  it('reads seeded tables when its own file is not there yet: no worker, the same counts, nothing written anywhere', async () => {
    const seed = join(tmp('tables-seed-'), 'tokens', 'cl100k.tables');
    await counter({ tablesFile: seed, tablesIdleMs: 0 }).ready();
    await expect.poll(() => checkTablesFile(seed)).toBeUndefined();
    const seedBytes = readFileSync(seed);
    const damagedSeed = join(tmp('tables-seed-'), 'cl100k.tables');
    writeFileSync(damagedSeed, 'not tables');
    const own = join(tmp('tables-own-'), 'tokens', 'cl100k.tables');

    const c = counter({ tablesFile: own, seedTablesFiles: [damagedSeed, seed], tablesIdleMs: 0 });
    c.prewarm();
    expect({ inline: c.countsInline, read: c.tablesRead, workers: c.workersStarted }).toEqual({ inline: true, read: 1, workers: 0 });
    expect(await c.count(text)).toBe(countTokensUnchunked(text));
    expect(c.workersStarted).toBe(0);
    expect(existsSync(own)).toBe(false);
    expect(readFileSync(seed).equals(seedBytes)).toBe(true);
    expect(readFileSync(damagedSeed, 'utf8')).toBe('not tables');
  });

  it('lets seeded tables go while idle and reads them back from the seed', async () => {
    const seed = join(tmp('tables-seed-'), 'cl100k.tables');
    await counter({ tablesFile: seed, tablesIdleMs: 0 }).ready();
    await expect.poll(() => checkTablesFile(seed)).toBeUndefined();
    const idle = idleOutcome();
    const c = counter({ tablesFile: join(tmp('tables-own-'), 'cl100k.tables'), seedTablesFiles: [seed], tablesIdleMs: 30, ...idle.opts });
    const dropped = idle.next();
    const before = await c.count(text);
    expect(await dropped).toBe(true);
    expect(await c.count(text)).toBe(before);
    expect({ read: c.tablesRead, workers: c.workersStarted }).toEqual({ read: 2, workers: 0 });
  });

  it('finds seeds under each seed root, laid out as the writable cache', () => {
    expect(tablesFile({ MURMUR_COMPONENT_CACHE: '/var/lib/murmur/cache/components' })).toBe('/var/lib/murmur/cache/tokens/cl100k_base.v1.tables');
    expect(seedTablesFiles({ MURMUR_COMPONENT_CACHE_SEED: '/opt/murmur/components::/srv/seed/c' })).toEqual([
      '/opt/murmur/tokens/cl100k_base.v1.tables',
      '/srv/seed/tokens/cl100k_base.v1.tables',
    ]);
    expect(seedTablesFiles({})).toEqual([]);
  });

  it('refuses a MURMUR_TOKEN_TABLES_IDLE_MS that is not a number of milliseconds (E-RUN-035), naming the variable', () => {
    expect(tokenTablesIdleMs({})).toBe(30_000);
    expect(tokenTablesIdleMs({ MURMUR_TOKEN_TABLES_IDLE_MS: '0' })).toBe(0);
    expect(() => tokenTablesIdleMs({ MURMUR_TOKEN_TABLES_IDLE_MS: 'later' })).toThrow(/MURMUR_TOKEN_TABLES_IDLE_MS must be a number of milliseconds/);
    expect(() => tokenTablesIdleMs({ MURMUR_TOKEN_TABLES_IDLE_MS: '-1' })).toThrow(expect.objectContaining({ code: 'E-RUN-035' }));
  });
});
