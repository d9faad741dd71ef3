/**
 * bench/tmp-root.ts: a bench process's temp dirs (test/loop/kit.ts `tmp`, what the arms make) go
 * under one folder of its own, removed when it exits — normally, or on SIGTERM — so a bench run
 * as a script leaves nothing in the temp dir it was given. Real node processes importing the module.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const MODULE = new URL('../../bench/tmp-root.ts', import.meta.url).pathname;
const KIT = new URL('../loop/kit.ts', import.meta.url).pathname;
let parent = '';
/** What is left in the temp dir the bench was given, but tsx's own cache (`tsx-<uid>`, tsx keeps it on purpose). */
const left = (): string[] => readdirSync(parent).filter((f) => !f.startsWith('tsx-'));
afterEach(() => rmSync(parent, { recursive: true, force: true }));

/** A bench-like process: imports the module first, makes temp dirs with `tmp`, prints where; `then` runs after. */
function bench(then: string) {
  parent = mkdtempSync(join(tmpdir(), 'tmp-root-test-'));
  const code = `import '${MODULE}'; import { tmp } from '${KIT}'; import { writeFileSync } from 'node:fs';
const a = tmp('ref-ours-work-'); writeFileSync(a + '/trace.jsonl', '{}'); tmp('bench-provider-');
console.log(JSON.stringify({ root: process.env.TMPDIR, a })); ${then}`;
  const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env: { ...process.env, TMPDIR: parent },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  p.stderr.on('data', (d: Buffer) => (err += d));
  const printed = new Promise<{ root: string; a: string }>((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out));
    });
    p.once('exit', (c) => reject(new Error(`exited ${c} before printing: ${err}`)));
  });
  const exited = new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
  return { p, printed, exited };
}

describe('bench temp folder', () => {
  it('puts the temp dirs of a bench in one folder under its TMPDIR and removes it at exit', async () => {
    const b = bench('');
    const { root, a } = await b.printed;
    expect(root.startsWith(`${parent}/capsule-bench-`)).toBe(true);
    expect(a.startsWith(`${root}/ref-ours-work-`)).toBe(true);
    expect(await b.exited).toBe(0);
    expect(existsSync(root)).toBe(false);
    expect(left()).toEqual([]);
  });

  it('removes the folder when the bench is ended by SIGTERM', async () => {
    const b = bench('setInterval(() => {}, 1e6);');
    const { root, a } = await b.printed;
    expect(existsSync(a)).toBe(true);
    b.p.kill('SIGTERM');
    expect(await b.exited).toBe(143);
    expect(existsSync(root)).toBe(false);
    expect(left()).toEqual([]);
  });
});

describe('bench entries', () => {
  it('import the temp folder before anything else, every bench bench/run.ts runs as a script', () => {
    const run = readFileSync(new URL('../../bench/run.ts', import.meta.url), 'utf8');
    const scripts = JSON.parse(/const scripts = (\[[^\]]*\])/.exec(run)![1]!.replaceAll("'", '"')) as string[];
    expect(scripts.length).toBeGreaterThan(5);
    for (const name of ['run', 'idle-task', ...scripts]) {
      const src = readFileSync(new URL(`../../bench/${name}.ts`, import.meta.url), 'utf8');
      expect(/^import .*$/m.exec(src)?.[0], `bench/${name}.ts`).toMatch(/^import '\.\/tmp-root\.ts';/);
    }
  });
});
