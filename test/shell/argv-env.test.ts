import { describe, expect, it } from 'vitest';
import { argsFromCommand, commandDisplay, isStrippedEnvName, shellEnv, shellScript, splitWords } from '../../runtime/shell/index.ts';

describe('shell argv helpers', () => {
  it('argsFromCommand: interpreters get -c <command>, others a quote-aware split with no expansion', () => {
    expect(argsFromCommand('bash', 'ls *.ts | wc -l')).toEqual(['-c', 'ls *.ts | wc -l']);
    expect(argsFromCommand('git', `commit -m "fix: the \\"thing\\"" --author='A B' a\\ b $HOME`)).toEqual([
      'commit',
      '-m',
      'fix: the "thing"',
      '--author=A B',
      'a b',
      '$HOME',
    ]);
    expect(splitWords(`echo 'unterminated`)).toBeUndefined();
    expect(splitWords(`  `)).toEqual([]);
    expect(splitWords(`a "" b`)).toEqual(['a', '', 'b']);
  });

  it('shellScript only for interpreters with -c', () => {
    expect(shellScript('/bin/sh', ['-c', 'x'])).toBe('x');
    expect(shellScript('python3', ['-c', 'x'])).toBeUndefined();
    expect(shellScript('bash', ['--norc', '-c', 'x'])).toBe('x');
    expect(shellScript('bash', ['-c', '--', 'x'])).toBe('x');
    expect(shellScript('bash', ['--', '-c'])).toBeUndefined();
    expect(shellScript('bash', ['-c'])).toBeUndefined();
  });

  it('commandDisplay is at most 200 characters', () => {
    expect(commandDisplay(['a'.repeat(500)])).toHaveLength(200);
    expect(commandDisplay([], '😀'.repeat(300))).toBe('😀'.repeat(200));
  });
});

describe('credential-shaped env stripping', () => {
  it('strips the documented shapes, case-insensitively, and keeps ordinary variables', () => {
    for (const n of [
      'OPENAI_API_KEY',
      'openai_api_key',
      'HF_TOKEN',
      'GH_TOKEN',
      'NPM_TOKEN',
      'CLIENT_SECRET',
      'PGPASSWORD',
      'MYSQL_PWD',
      'AWS_ACCESS_KEY_ID',
      'AWS_PROFILE',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'DOCKER_AUTH_CONFIG',
      'KUBECONFIG',
      'SSH_AUTH_SOCK',
      'DATABASE_URL',
      'VAULT_ADDR',
    ]) {
      expect(isStrippedEnvName(n), n).toBe(true);
    }
    for (const n of ['PATH', 'LANG', 'TERM', 'USER', 'PWD', 'OLDPWD', 'TMPDIR', 'LC_ALL', 'EDITOR', 'KEYBOARD']) {
      expect(isStrippedEnvName(n), n).toBe(false);
    }
    expect(isStrippedEnvName('INTERNAL_X', ['INTERNAL_*'])).toBe(true);
  });

  it('shellEnv sets HOME/USERPROFILE/PWD and reports stripped names', () => {
    const { env, stripped } = shellEnv({ env: { PATH: '/bin', HOME: '/root', A_TOKEN: 't', X: undefined }, home: '/wd', cwd: '/wd' });
    expect(env).toEqual({ PATH: '/bin', HOME: '/wd', USERPROFILE: '/wd', PWD: '/wd' });
    expect(stripped).toEqual(['A_TOKEN']);
  });
});

describe('shellScript with option values', () => {
  it('skips --rcfile/--init-file values', () => {
    expect(shellScript('bash', ['--rcfile', 'x', '-c', 'echo'])).toBe('echo');
  });
});
