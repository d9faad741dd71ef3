/**
 * A real headless Chromium for the console's tests: Debian's `chromium` package, installed with
 * apt-get on first use when it is missing (as build-on-use.ts builds its tools; `.ci/run` installs
 * it first as a timed step), driven by playwright-core (which downloads no browser). A machine
 * without apt and without Chromium fails the suite saying what to install; it never skips.
 *
 * Screenshots go to .cache/console-screenshots/ (git-ignored), one per view, named by the test.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

/** The browser binary itself: /usr/bin/chromium is a shell wrapper around it. */
export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/lib/chromium/chromium';
export const SCREENSHOTS = path.join(PROJECT_ROOT, '.cache', 'console-screenshots');

/** An apt-get install may take minutes on a cold machine: a beforeAll of its own with this timeout. */
export const CHROMIUM_INSTALL_TIMEOUT_MS = 15 * 60_000;

function run(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 2, 2], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    child.on('error', reject);
    child.on('exit', (c) => resolve(c ?? 1));
  });
}

export async function ensureChromium(): Promise<void> {
  if (existsSync(CHROMIUM)) return;
  const apt = existsSync('/usr/bin/apt-get');
  if (!apt || process.getuid?.() !== 0) {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium, as root), or set CHROMIUM_BIN`);
  }
  if ((await run('apt-get', ['update', '-qq'])) !== 0 || (await run('apt-get', ['install', '-y', '-qq', 'chromium'])) !== 0) {
    throw new Error('apt-get install chromium failed (its output is above)');
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is not there; set CHROMIUM_BIN`);
}

export async function launchBrowser(): Promise<Browser> {
  await ensureChromium();
  // Chromium puts its singleton socket under $TMPDIR, and a Unix socket path holds at most 107
  // bytes: under `npm test` TMPDIR is nested once per vitest project's set-up, which is too deep
  // (Chromium aborts: "Socket path too long"). It gets a short folder of its own under /tmp,
  // removed when the browser closes.
  const tmp = mkdtempSync('/tmp/chromium-');
  // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
  const browser = await chromium
    .launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      env: { ...process.env, TMPDIR: tmp },
    })
    .catch((e: unknown) => {
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    });
  browser.on('disconnected', () => rmSync(tmp, { recursive: true, force: true }));
  return browser;
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
