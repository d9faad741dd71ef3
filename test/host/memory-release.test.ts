/**
 * Freed memory given back when the runtime goes idle (runtime/memory.ts and its addon,
 * runtime/native/memory.c): glibc keeps freed heap memory resident below a live allocation; the
 * release collects garbage and hands that memory back to the kernel.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  addonPath,
  canRelease,
  describeRelease,
  noteLetGo,
  onReleased,
  releaseFreedMemory,
  releaseWhenSettled,
  settle,
  settleMs,
  type Released,
} from '../../runtime/memory.ts';
import { MurError } from '../../runtime/errors.ts';
import { nativeAddon } from '../../runtime/native-addon.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../loop/kit.ts';

const MiB = 1048576;

/** The next release {@link releaseWhenSettled} makes. */
function nextRelease(): Promise<Released> {
  return new Promise((resolve) => {
    const off = onReleased((r) => {
      off();
      resolve(r);
    });
  });
}

describe('giving freed memory back', () => {
  it('has its addon built and loading (scripts/build-native.ts, run by npm test)', () => {
    if (!canRelease())
      throw new Error(
        `runtime/native/memory.node is ${addonPath() ? 'there but does not load' : 'not built'}: run node --import tsx scripts/build-native.ts (needs a C compiler and Node's headers)`,
      );
    expect(canRelease()).toBe(true);
  });

  it('returns heap memory freed below a live allocation, which a GC alone leaves resident', () => {
    // In a process of its own: 64 MiB of 16-KiB buffers (malloc'd from glibc's heap, under its mmap
    // threshold), every 50th and the last kept alive so the heap cannot shrink from its top.
    const script = join(tmp('release-'), 'probe.mts');
    writeFileSync(
      script,
      `
      import { releaseFreedMemory } from ${JSON.stringify(join(PROJECT_ROOT, 'runtime/memory.ts'))};
      const rss = () => process.memoryUsage.rss();
      const keep = [];
      let all = [];
      for (let i = 0; i < 4096; i++) { const b = Buffer.alloc(16384, i & 255); all.push(b); if (i % 50 === 0 || i === 4095) keep.push(b); }
      const filled = rss();
      all = null;
      globalThis.gc();
      const afterGc = rss();
      const r = releaseFreedMemory(['probe']);
      console.log(JSON.stringify({ filled, afterGc, afterRelease: rss(), r, kept: keep.length }));
    `,
    );
    const p = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script], { cwd: PROJECT_ROOT, encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(p.stderr).toBe('');
    const out = JSON.parse(p.stdout) as { filled: number; afterGc: number; afterRelease: number; r: Released };
    expect(out.afterGc).toBeGreaterThan(out.filled - 16 * MiB); // the GC freed the buffers, glibc kept the pages
    expect(out.r).toMatchObject({ addon: true, returned: true, after: ['probe'] });
    expect(out.afterGc - out.afterRelease).toBeGreaterThan(32 * MiB);
    expect(out.r.rssBefore - out.r.rssAfter).toBeGreaterThan(32 * MiB);
  });

  it('makes one release for the parts that go idle within a moment of one another, naming them', async () => {
    const released = nextRelease();
    releaseWhenSettled('component thread');
    releaseWhenSettled('token tables');
    releaseWhenSettled('component thread');
    const r = await released;
    expect(r.after).toEqual(['component thread', 'token tables']);
    expect(describeRelease(r)).toMatch(/^idle \(component thread, token tables let go\): RSS \d+\.\d → \d+\.\d MiB$/);
  });

  it('names a part let go while tasks may run (noteLetGo) in the next release, which only an idle part starts', async () => {
    const released = nextRelease();
    noteLetGo('token worker');
    releaseWhenSettled('component thread');
    expect((await released).after).toEqual(['token worker', 'component thread']);
  });

  it('leaves no gc function in contexts made after it (the one it takes is its own)', () => {
    releaseFreedMemory();
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it('says when the addon is missing that freed memory is kept', () => {
    expect(describeRelease({ addon: false, returned: false, rssBefore: 100 * MiB, rssAfter: 98 * MiB, after: ['spare worker'], kind: 'idle', ms: 20 })).toBe(
      'idle (spare worker let go): RSS 100.0 → 98.0 MiB (freed memory kept: runtime/native/memory.node is not built, scripts/build-native.ts)',
    );
  });
});

describe('settling a quiet process (the light release before the idle one)', () => {
  it('collects and returns freed memory at once, saying what went quiet, and is left to an idle release that is due', async () => {
    const seen: Released[] = [];
    const off = onReleased((r) => seen.push(r));
    const r = settle('component thread')!;
    expect(r).toMatchObject({ kind: 'settle', after: ['component thread'], addon: true });
    expect(describeRelease(r)).toMatch(/^settled \(component thread quiet\): RSS \d+\.\d → \d+\.\d MiB in \d+ ms$/);
    const released = nextRelease();
    releaseWhenSettled('token tables');
    expect(settle('component thread')).toBeUndefined();
    expect((await released).kind).toBe('idle');
    off();
    expect(seen.map((x) => x.kind)).toEqual(['settle', 'idle']);
  });

  it("takes the mapped files still in use out of the process's resident set, their pages reading back unchanged", () => {
    const file = join(tmp('mapped-'), 'tables.bin');
    const content = randomBytes(4 * MiB);
    writeFileSync(file, content);
    const view = new Uint8Array(nativeAddon()!.mapFile!(file)!);
    let sum = 0;
    for (let i = 0; i < view.length; i += 4096) sum += view[i]!;
    expect(sum).toBeGreaterThan(0);
    /** This mapping's resident bytes (/proc/self/smaps). */
    const resident = (): number => {
      const lines = readFileSync('/proc/self/smaps', 'utf8').split('\n');
      const at = lines.findIndex((l) => l.endsWith(` ${file}`));
      expect(at).toBeGreaterThanOrEqual(0);
      const rss = lines.slice(at + 1).find((l) => l.startsWith('Rss:'))!;
      return Number(/(\d+) kB/.exec(rss)![1]) * 1024;
    };
    expect(resident()).toBeGreaterThan(3.9 * MiB);
    releaseFreedMemory(['probe'], 'settle');
    expect(resident()).toBe(0);
    expect(Buffer.from(view.buffer, view.byteOffset, view.byteLength).equals(content)).toBe(true);
  });

  it.each([
    [undefined, 500],
    ['', 500],
    ['0', 0],
    ['250', 250],
  ])('MURMUR_SETTLE_MS=%j reads as %d ms', (v, want) => {
    expect(settleMs(v === undefined ? {} : { MURMUR_SETTLE_MS: v })).toBe(want);
  });

  it.each(['-1', 'soon', '1s'])('refuses MURMUR_SETTLE_MS=%j, naming the variable and the unit (E-RUN-086)', (v) => {
    let e: unknown;
    try {
      settleMs({ MURMUR_SETTLE_MS: v });
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(MurError);
    expect((e as MurError).code).toBe('E-RUN-086');
    expect((e as MurError).message).toBe(`MURMUR_SETTLE_MS must be a number of milliseconds ≥ 0, not ${JSON.stringify(v)}`);
  });
});
