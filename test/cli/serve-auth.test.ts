/** `mur serve` authentication settings: key sources, loopback-only open serving, the start notice. */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveAuth } from '../../runtime/cli/serve-staged.ts';
import { isLoopback, readApiKeys } from '../../runtime/a2a/server/auth-config.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'serve-auth-'));
const KEY_A = `${'a'.repeat(20)}-alpha`;
const KEY_B = `${'b'.repeat(20)}-beta`;

describe('mur serve authentication', () => {
  it('off loopback with no scheme and no --anonymous it refuses to start (E-A2A-020)', () => {
    expect(() => serveAuth({}, '0.0.0.0', 'http://x:8080/')).toThrow(expect.objectContaining({ code: 'E-A2A-020' }));
  });

  it('on loopback it stays open, and says so', async () => {
    const { auth, notice } = serveAuth({}, '127.0.0.1', 'http://127.0.0.1:8080/');
    expect(notice).toMatch(/no authentication: anyone who can reach 127\.0\.0\.1/);
    expect((await auth.authenticate({})).isAuthenticated).toBe(false);
  });

  it('--anonymous off loopback is allowed and announced', () => {
    expect(serveAuth({ anonymous: true }, '0.0.0.0', 'http://x/').notice).toMatch(/anonymous callers allowed/);
  });

  it('reads keys from a holder:key file and from a Secret folder; the notice names holders, never keys', async () => {
    const file = path.join(tmp, 'keys.txt');
    writeFileSync(file, `# CI and ops\nci-bot: ${KEY_A}\n\nops:${KEY_B}\n`);
    expect(readApiKeys(file)).toEqual([
      { name: 'ci-bot', key: KEY_A },
      { name: 'ops', key: KEY_B },
    ]);
    const dir = path.join(tmp, 'secret');
    mkdirSync(path.join(dir, '..2026_01_01'), { recursive: true });
    writeFileSync(path.join(dir, 'ci-bot'), `${KEY_A}\n`);
    expect(readApiKeys(dir)).toEqual([{ name: 'ci-bot', key: KEY_A }]);
    const { auth, notice } = serveAuth({ 'api-keys': file }, '0.0.0.0', 'http://x/');
    expect(notice).toBe('authentication: API keys of ci-bot, ops');
    expect(notice).not.toContain(KEY_A);
    expect((await auth.authenticate({ authorization: `Bearer ${KEY_B}` })).userName).toBe('apikey:ops');
    await expect(auth.authenticate({})).rejects.toThrow(/authentication required/);
  });

  it('a malformed keys file names the line and never quotes it (E-A2A-021)', () => {
    const file = path.join(tmp, 'bad.txt');
    writeFileSync(file, `ok:${KEY_A}\n${KEY_B}\n`);
    let err: any;
    try {
      readApiKeys(file);
    } catch (e) {
      err = e;
    }
    expect(err?.code).toBe('E-A2A-021');
    expect(err.message).toContain('line 2');
    expect(err.message).not.toContain(KEY_B);
    writeFileSync(file, 'short:abc\n');
    expect(() => readApiKeys(file)).toThrow(/shorter than 16/);
    expect(() => readApiKeys(path.join(tmp, 'missing'))).toThrow(expect.objectContaining({ code: 'E-A2A-021' }));
  });

  it('loopback addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.1', '192.168.1.1'].some(isLoopback)).toBe(false);
  });
});
