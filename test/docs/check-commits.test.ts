/**
 * scripts/check-commits.ts (run by `npm run lint`) on a real git repository made here: it names
 * each commit since the base whose subject is over 72 characters or that has no body, lets merges
 * and commits before the base through, and its recorded base is in this repository's history.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BASE, LET_THROUGH, commits, offenders, problems } from '../../scripts/check-commits.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function repo(): { dir: string; git: (...args: string[]) => string; commit: (file: string, ...message: string[]) => string } {
  const dir = mkdtempSync(join(tmpdir(), 'check-commits-'));
  dirs.push(dir);
  const git = (...args: string[]): string =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      encoding: 'utf8',
    }).trim();
  git('init', '-q', '-b', 'main');
  const commit = (file: string, ...message: string[]): string => {
    writeFileSync(join(dir, file), file);
    git('add', file);
    git('commit', '-q', ...message.flatMap((m) => ['-m', m]));
    return git('rev-parse', 'HEAD');
  };
  return { dir, git, commit };
}

describe('commit-message check', () => {
  it('names each commit since the base with a subject over 72 characters or no body', () => {
    const r = repo();
    r.commit('old', 'an old commit before the rule with a subject far longer than seventy-two characters in all');
    const base = r.commit('base', 'Add the check', 'Why: the rule starts here.');
    const long = r.commit('long', `${'x'.repeat(73)}`, 'A body.');
    const bare = r.commit('bare', 'No body here');
    r.commit('fine', `${'y'.repeat(72)}`, 'A body saying why.');
    const found = offenders(r.dir, base);
    expect(found.map((o) => [o.commit.hash, o.problems])).toEqual([
      [bare, ['no body saying why']],
      [long, ['subject is 73 characters (at most 72)']],
    ]);
  });

  it('checks the base commit itself and lets merge commits through', () => {
    const r = repo();
    r.commit('root', 'Root', 'Body.');
    const base = r.commit('base', 'Base without a body');
    r.git('checkout', '-q', '-b', 'side');
    r.commit('side', 'Side change', 'Body.');
    r.git('checkout', '-q', 'main');
    r.commit('main2', 'Main change', 'Body.');
    r.git('merge', '-q', '--no-ff', '--no-edit', 'side');
    expect(offenders(r.dir, base).map((o) => o.commit.hash)).toEqual([base]);
  });

  it('lets through the commits it lists by hash, and only those', () => {
    const r = repo();
    const base = r.commit('base', 'Base', 'Body.');
    const listed = r.commit('listed', 'No body, listed');
    const other = r.commit('other', 'No body, not listed');
    expect(offenders(r.dir, base, { [listed]: 'no body' }).map((o) => o.commit.hash)).toEqual([other]);
  });

  it('lists only commits of this history since the base that do break the rule', () => {
    const root = join(import.meta.dirname, '..', '..');
    const since = new Map(commits(root, `${BASE}..HEAD`).map((c) => [c.hash, c]));
    for (const hash of Object.keys(LET_THROUGH)) {
      const c = since.get(hash);
      expect(c, hash).toBeDefined();
      expect(problems(c!), hash).not.toEqual([]);
    }
  });

  it("records a base that is in this repository's history", () => {
    expect(BASE).toMatch(/^[0-9a-f]{40}$/);
    const root = join(import.meta.dirname, '..', '..');
    expect(() => execFileSync('git', ['cat-file', '-e', `${BASE}^{commit}`], { cwd: root })).not.toThrow();
  });
});
