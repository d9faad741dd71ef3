/**
 * The serving threads' scheduler slice (runtime/thread-slice.ts): MURMUR_THREAD_SLICE_US read
 * with one rule, and what a native call's answer means. `mur serve`'s threads are checked in
 * test/cli/serve-thread-slice.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MurError } from '../runtime/errors.ts';
import { addonPath } from '../runtime/native-addon.ts';
import { DEFAULT_SLICE_US, sliceOutcome, threadSliceFromEnv } from '../runtime/thread-slice.ts';

describe('MURMUR_THREAD_SLICE_US', () => {
  it.each([
    [undefined, DEFAULT_SLICE_US],
    ['', DEFAULT_SLICE_US],
    ['0', 0],
    ['100', 100],
    ['250', 250],
    ['100000', 100_000],
  ])('%j asks for %d µs', (value, us) => {
    expect(threadSliceFromEnv(value === undefined ? {} : { MURMUR_THREAD_SLICE_US: value })).toBe(us);
  });

  it.each(['50', '99', '100001', '-1', 'fast', ' '])('%j is refused with E-RUN-087, the variable and its range named', (value) => {
    let err: unknown;
    try {
      threadSliceFromEnv({ MURMUR_THREAD_SLICE_US: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MurError);
    expect((err as MurError).code).toBe('E-RUN-087');
    expect((err as MurError).message).toContain('MURMUR_THREAD_SLICE_US');
    expect((err as MurError).message).toContain(JSON.stringify(value));
    expect((err as MurError).message).toMatch(/100000/);
  });
});

describe('what a slice request came to', () => {
  it.each([
    [100_000, 100_000, true, ''],
    [250_000, 250_000, true, ''],
    [100_000, undefined, false, 'native addon'],
    [100_000, -95, false, 'not under the fair scheduler'],
    [100_000, -1, false, 'errno 1'],
    [100_000, 0, false, 'Linux 6.12'],
    [100_000, 1_400_000, false, 'Linux 6.12'],
  ])('asked %d ns, answered %j: applied %s', (asked, answer, applied, why) => {
    const o = sliceOutcome(asked, answer);
    expect(o.applied).toBe(applied);
    if (!o.applied) expect(o.why).toContain(why);
    else expect(o.ns).toBe(asked);
  });

  it('the native call sets the calling thread’s slice, and a thread or process it starts afterwards has the kernel’s default', () => {
    const addon = addonPath();
    if (!addon) throw new Error('runtime/native/memory.node is not built: node --import tsx scripts/build-native.ts (npm test builds it)');
    const script = `
      const fs = require('fs');
      const slice = () => Number(/se\\.slice\\s*:\\s*(\\d+)/.exec(fs.readFileSync('/proc/thread-self/sched', 'utf8'))[1]);
      const a = require(${JSON.stringify(addon)});
      const before = slice();
      const answer = a.setThreadSlice(250000);
      const after = slice();
      const { Worker } = require('worker_threads');
      const w = new Worker("const fs = require('fs'); require('worker_threads').parentPort.postMessage(fs.readFileSync('/proc/thread-self/sched', 'utf8'))", { eval: true });
      w.once('message', (m) => {
        const child = require('child_process').execFileSync('cat', ['/proc/self/sched'], { encoding: 'utf8' });
        const n = (t) => Number(/se\\.slice\\s*:\\s*(\\d+)/.exec(t)[1]);
        const back = a.setThreadSlice(0);
        console.log(JSON.stringify({ before, answer, after, thread: n(m), child: n(child), back, reset: slice() }));
      });`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout) as Record<string, number>;
    if (o.after !== 250_000)
      throw new Error(
        `this kernel keeps its own slice (${o.after} ns after asking for 250000): custom slices need Linux 6.12 or later; uname -r: ${spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim()}`,
      );
    expect(o.answer).toBe(250_000);
    expect(o.thread).toBe(o.before);
    expect(o.child).toBe(o.before);
    expect(o.back).toBe(o.before);
    expect(o.reset).toBe(o.before);
  });
});
