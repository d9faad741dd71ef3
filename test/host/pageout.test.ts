/**
 * The Node binary's pages out of an idle process's RSS (runtime/native/pageout.c): the addon asks
 * the kernel to reclaim the running executable's read-only file pages. Run in a process of its own
 * on a private copy of the node binary, so no other process maps its pages (the kernel keeps pages
 * another process maps: every capsule pod of one image shares them, and they stay).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonPath } from '../../runtime/memory.ts';
import { tmp } from '../loop/kit.ts';

/** RssFile is in KiB. */
const MiB_IN_KIB = 1024;

describe("the executable's pages out of an idle process", () => {
  it('pageOutExecutable drops the node binary pages only this process maps from its RSS, and the process runs on', () => {
    const addon = addonPath();
    if (!addon) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    const node = join(tmp('pageout-'), 'node');
    copyFileSync(process.execPath, node);
    const script = `
      const a = require(${JSON.stringify(addon)});
      const rssFile = () => Number(/RssFile:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]);
      const before = rssFile();
      const advised = a.pageOutExecutable();
      const after = rssFile();
      // Still a working process: code it had not run since pages in again.
      const ran = JSON.parse(JSON.stringify({ sum: [1, 2, 3].reduce((x, y) => x + y, 0), t: new Intl.DateTimeFormat('en', { month: 'long' }).format(new Date(0)) }));
      console.log(JSON.stringify({ before, advised, after, ran }));
    `;
    const p = spawnSync(node, ['-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(p.stderr).toBe('');
    const out = JSON.parse(p.stdout) as { before: number; advised: number; after: number; ran: { sum: number; t: string } };
    expect(out.advised).toBeGreaterThan(0);
    // RssFile in KiB: the binary's code and data paged in by the start (tens of MiB) mostly leave.
    expect(out.after).toBeLessThan(out.before / 2);
    expect(out.before - out.after).toBeGreaterThan(8 * MiB_IN_KIB);
    expect(out.ran).toEqual({ sum: 6, t: 'January' });
  });
});
