/**
 * bin/mur picks what it runs: the compiled dist/ when it is at least as new as every runtime source
 * (npm run build stamps dist/.built last), else the TypeScript sources through tsx; MUR_FROM forces
 * one. Run against a copy of the launcher in a scratch tree whose two entry points say which ran.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../registry/helpers.ts';

function tree(): { root: string; run(env?: Record<string, string>): string } {
  const root = tmp('bin-mur-');
  mkdirSync(join(root, 'bin'));
  copyFileSync(join(PROJECT_ROOT, 'bin/mur'), join(root, 'bin/mur'));
  copyFileSync(join(PROJECT_ROOT, 'bin/scrub-key.mjs'), join(root, 'bin/scrub-key.mjs'));
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(root, 'node_modules'));
  writeFileSync(join(root, 'package.json'), '{"type":"module"}');
  mkdirSync(join(root, 'runtime/cli'), { recursive: true });
  writeFileSync(join(root, 'runtime/cli/main.ts'), "const from: string = 'src';\nconsole.log(from);\n");
  mkdirSync(join(root, 'dist/runtime/cli'), { recursive: true });
  writeFileSync(join(root, 'dist/runtime/cli/main.js'), "console.log('dist');\n");
  return {
    root,
    run: (env = {}) =>
      execFileSync(process.execPath, [join(root, 'bin/mur')], { env: { PATH: process.env.PATH, ...env } })
        .toString()
        .trim(),
  };
}

const at = (file: string, secondsAgo: number) => {
  const t = new Date(Date.now() - secondsAgo * 1000);
  utimesSync(file, t, t);
};

describe('bin/mur', () => {
  it('runs the sources while dist/ was never stamped by a build', () => {
    expect(tree().run()).toBe('src');
  });

  it('runs dist/ when its build stamp is at least as new as every runtime source, and the sources once one is edited after', () => {
    const t = tree();
    at(join(t.root, 'runtime/cli/main.ts'), 60);
    writeFileSync(join(t.root, 'dist/.built'), 'now');
    expect(t.run()).toBe('dist');
    writeFileSync(join(t.root, 'runtime/cli/main.ts'), "console.log('src');\n");
    at(join(t.root, 'dist/.built'), 30);
    expect(t.run()).toBe('src');
  });

  it('MUR_FROM forces either one', () => {
    const t = tree();
    at(join(t.root, 'runtime/cli/main.ts'), 60);
    writeFileSync(join(t.root, 'dist/.built'), 'now');
    expect(t.run({ MUR_FROM: 'src' })).toBe('src');
    expect(tree().run({ MUR_FROM: 'dist' })).toBe('dist');
  });
});
