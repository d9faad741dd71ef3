/**
 * on-stage (hooks.md, wit-interfaces.md): runs once at staging in a throwaway instance, before the
 * trace exists — faults go to the hook log only. A committed write-manifests writes
 * `<workdir>/tools/<binary-name>/murmur.yaml`, overwriting; a binary-name that is not exactly one
 * directory name under tools/ is refused.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, scriptHook, type Harness } from './harness.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

const stager = (val: unknown, extra = {}) =>
  scriptHook(
    'enrich',
    { 'on-stage': { record: true, ret: { tag: 'write-manifests', val } } },
    { binding: 'on-stage', commitPolicy: 'write-manifests', ...extra },
  );

describe('write-manifests', () => {
  it('writes tools/<binary>/murmur.yaml, overwriting an existing file; the hook saw shell-allow', async () => {
    const h = await harness(
      [
        await stager([
          { binaryName: 'jq', content: 'name: jq\ndescription: JSON processor\n' },
          { binaryName: 'git', content: 'name: git\n' },
        ]),
      ],
      {},
      false,
    );
    open.push(h);
    mkdirSync(join(h.dir, 'tools', 'jq'), { recursive: true });
    writeFileSync(join(h.dir, 'tools', 'jq', 'murmur.yaml'), 'old content\n');
    await h.bus.stage({ shellAllow: ['jq', 'git'] });
    expect(readFileSync(join(h.dir, 'tools', 'jq', 'murmur.yaml'), 'utf8')).toBe('name: jq\ndescription: JSON processor\n');
    expect(readFileSync(join(h.dir, 'tools', 'git', 'murmur.yaml'), 'utf8')).toBe('name: git\n');
    expect(h.recs[0]).toMatchObject({ rec: 'on-stage', ev: { shellAllow: ['jq', 'git'] } });
    expect(existsSync(h.trace.path)).toBe(false);
  });

  it('refuses binary names that are empty, hold a slash or climb with ..; writes the good ones', async () => {
    const bad = ['../escape', 'a/b', '', '..', '.', '..\\up', 'x/../../y'];
    const h = await harness([await stager([...bad.map((b) => ({ binaryName: b, content: 'pwned' })), { binaryName: 'ok', content: 'fine' }])], {}, false);
    open.push(h);
    await h.bus.stage({ shellAllow: [] });
    expect(readdirSync(join(h.dir, 'tools'))).toEqual(['ok']);
    expect(readdirSync(h.dir).sort()).toEqual(['logs', 'tools']);
    expect(existsSync(join(dirname(h.dir), 'escape'))).toBe(false);
    const log = h.log('enrich');
    for (const b of bad) expect(log).toContain(`binary-name ${JSON.stringify(b)} is not a single directory name under tools/`);
  });

  it('a throwaway instance per staging: the hook keeps no state from it', async () => {
    const h = await harness([await stager([])], {}, false);
    open.push(h);
    await h.bus.stage({ shellAllow: [] });
    await h.bus.stage({ shellAllow: [] });
    expect(h.recs.map((r) => r.n)).toEqual([1, 1]);
  });
});

describe('faults at staging reach the hook log only', () => {
  it('an err, a trap and an unhonored arm: log lines, no trace events even once the trace is attached', async () => {
    const err = await scriptHook('e', { 'on-stage': { err: 'no manifests for you' } }, { binding: 'on-stage', commitPolicy: 'write-manifests' });
    const trap = await scriptHook('t', { 'on-stage': { trap: true } }, { binding: 'on-stage', commitPolicy: 'write-manifests' });
    const arm = await scriptHook('a', { 'on-stage': { ret: { tag: 'reopen-task', val: 'x' } } }, { binding: 'on-stage', commitPolicy: 'write-manifests' });
    const h = await harness([err, trap, arm]);
    open.push(h);
    await h.bus.stage({ shellAllow: [] });
    expect(h.log('e')).toMatch(/on-stage returned err: no manifests for you/);
    expect(h.log('t')).toMatch(/on-stage crashed/);
    expect(h.log('a')).toMatch(/on-stage returned arm 'reopen-task', which on-stage does not commit/);
    expect(h.events()).toEqual([]);
  });

  it('hooks without binding on-stage are never staged', async () => {
    const h = await harness([await scriptHook('all', { '*': { record: true } })], {}, false);
    open.push(h);
    await h.bus.stage({ shellAllow: [] });
    expect(h.recs).toEqual([]);
  });
});
