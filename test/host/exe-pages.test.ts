/**
 * The Node binary's pages out of an idle process's resident set (runtime/native/exe.c, called by
 * the idle release in runtime/memory.ts). Each probe runs in a process of its own, on the same
 * node binary this test runs on (so its pages are shared with this process, as the images' binary
 * is shared by every Node process of a node), as an unprivileged user that does not own the
 * binary when the test runs as root (the runtime image runs as UID 65532 against root's binary).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonPath } from '../../runtime/memory.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../loop/kit.ts';

/** RssFile and Rss are in KiB. */
const MiB_IN_KIB = 1024;
/** Not root's: the runtime image's user does not own the node binary either. */
const NOBODY = 65534;

/** The source runs as an ES module given on the command line: the per-test folders are the test user's alone. */
function probe(source: string, args: string[] = [], env: Record<string, string> = {}, node = process.execPath): Record<string, unknown> {
  const asNobody = process.getuid?.() === 0 && node === process.execPath ? { uid: NOBODY, gid: NOBODY } : {};
  const p = spawnSync(node, ['--import', 'tsx', '--input-type=module', '-e', source, '--', ...args], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, ...env },
    ...asNobody,
  });
  expect(p.stderr).toBe('');
  return JSON.parse(p.stdout) as Record<string, unknown>;
}

const STATUS = `
  import { readFileSync } from 'node:fs';
  const status = () => {
    const s = readFileSync('/proc/self/status', 'utf8');
    return { rss: Number(/VmRSS:\\s+(\\d+)/.exec(s)[1]), file: Number(/RssFile:\\s+(\\d+)/.exec(s)[1]) };
  };
  // Code the start did not run, so its pages must come back from the page cache once let go.
  const work = () => JSON.stringify({ sum: [1, 2, 3].reduce((x, y) => x + y, 0), month: new Intl.DateTimeFormat('en', { month: 'long' }).format(new Date(0)) });
`;

describe("the Node binary's pages out of an idle process", () => {
  it('unresidentExecutable lets the shared binary pages go from a process that does not own the binary, and it runs on', () => {
    const addon = addonPath();
    if (!addon) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    const out = probe(`
      import { createRequire } from 'node:module';
      ${STATUS}
      const a = createRequire(import.meta.url)(${JSON.stringify(addon)});
      const before = status();
      const released = a.unresidentExecutable();
      const after = status();
      console.log(JSON.stringify({ uid: process.getuid(), before, released, after, ran: work() }));
    `) as { uid: number; before: { file: number }; released: number; after: { file: number }; ran: string };
    if (process.getuid?.() === 0) expect(out.uid).toBe(NOBODY);
    // Tens of MiB of the binary's code and read-only data were resident after the start; most go.
    expect(out.released).toBeGreaterThan(8 * MiB_IN_KIB * 1024);
    expect(out.after.file).toBeLessThan(out.before.file / 2);
    expect(out.before.file - out.after.file).toBeGreaterThan(8 * MiB_IN_KIB);
    // Still a working process: code it had not run comes back, and runs right.
    expect(JSON.parse(out.ran)).toEqual({ sum: 6, month: 'January' });
  });

  it('lets go the pages of a binary written moments before, which the page cache still holds dirty', () => {
    const addon = addonPath();
    if (!addon) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    // A fresh copy written through the page cache (as tar unpacks an image root; not copyFileSync,
    // whose in-kernel copy leaves no dirty page): its pages are dirty until written back, and smaps
    // counts them Private_Dirty in the process that maps them.
    const node = join(tmp('exe-pages-'), 'node');
    writeFileSync(node, readFileSync(process.execPath));
    chmodSync(node, 0o755);
    const out = probe(
      `
      import { createRequire } from 'node:module';
      ${STATUS}
      const a = createRequire(import.meta.url)(${JSON.stringify(addon)});
      const before = status();
      const released = a.unresidentExecutable();
      console.log(JSON.stringify({ before, released, ran: work() }));
    `,
      [],
      {},
      node,
    ) as { before: { file: number }; released: number; ran: string };
    // What was resident in the binary's mappings left. (RssFile is not compared here: a file this
    // fresh sits in large folios that the kernel maps 2 MiB at a time, so the few pages the probe
    // runs next bring whole 2-MiB blocks back.)
    expect(out.released).toBeGreaterThan(8 * MiB_IN_KIB * 1024);
    expect(out.released).toBeGreaterThan((out.before.file * 1024) / 2);
    expect(JSON.parse(out.ran)).toEqual({ sum: 6, month: 'January' });
  });

  it('an idle release lets the binary pages go; a settle keeps them', () => {
    const run = (kind: string) =>
      probe(
        `
        import { releaseFreedMemory } from ${JSON.stringify(join(PROJECT_ROOT, 'runtime/memory.ts'))};
        ${STATUS}
        const before = status();
        const r = releaseFreedMemory(['probe'], process.argv.at(-1));
        const after = status();
        console.log(JSON.stringify({ before, after, executable: r.executable ?? null, ran: work() }));
      `,
        [kind],
      ) as { before: { file: number }; after: { file: number }; executable: number | null; ran: string };
    const idle = run('idle');
    expect(idle.executable).toBeGreaterThan(8 * MiB_IN_KIB * 1024);
    expect(idle.after.file).toBeLessThan(idle.before.file / 2);
    expect(JSON.parse(idle.ran)).toEqual({ sum: 6, month: 'January' });
    const settle = run('settle');
    expect(settle.executable).toBeNull();
    expect(settle.after.file).toBeGreaterThan(settle.before.file / 2);
  });
});
