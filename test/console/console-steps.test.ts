/**
 * `mur console`'s chat and timeline for a task whose steps include a hook's denial, an allowing
 * policy hook's decision and a shell call, in a real headless Chromium against a real `mur serve`
 * (real WASM components, real policy hooks, the scripted provider): each turn with its model and
 * tokens, each hook call with its binding and decision, the denial with the hook and its reason,
 * the shell command with its exit code, the task's end with its totals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { closeAll } from '../client/kit.ts';
import { servedSteps } from '../client/steps-capsule.ts';
import { openConsole } from '../../runtime/cli/console.ts';
import type { RunningConsole } from '../../runtime/console/server.ts';
import { CHROMIUM_INSTALL_TIMEOUT_MS, launchBrowser, screenshot } from '../support/browser.ts';

let browser: Browser;
let con: RunningConsole;
let url: string;

beforeAll(async () => {
  browser = await launchBrowser();
}, CHROMIUM_INSTALL_TIMEOUT_MS);

beforeAll(async () => {
  url = await servedSteps({
    turns: [
      { toolCalls: [{ name: 'echo', input: { text: 'q' } }] },
      { toolCalls: [{ name: 'printf', input: { command: 'hello-from-shell' } }] },
      { text: 'all done' },
    ],
  });
  con = (await openConsole(
    [url, '--kubeconfig', '/nonexistent/kubeconfig'],
    () => {},
    () => {},
  ))!;
});

afterAll(async () => {
  await browser?.close();
  await con?.close();
  await closeAll();
});

describe('mur console: a task’s steps', () => {
  it('shows each turn with model and tokens, a hook’s denial with its reason, each hook call’s decision, the shell command and exit code, in the chat and the timeline', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(con.url);
    await page.getByRole('button', { name: url }).click();
    await page.locator('body[data-tasks="loaded"]').waitFor();
    await page.getByLabel('Message').fill('do the steps');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('body[data-chat="done"]').waitFor();
    const expectSteps = (lines: string[]) => {
      const all = JSON.stringify(lines);
      expect(
        lines.some((l) => /^turn 1: claude-test → tool echo — \d+ in \/ \d+ out tokens, \d+ ms$/.test(l)),
        all,
      ).toBe(true);
      expect(lines, all).toContain('⊘ "echo" denied by hook guard: echo is not allowed today');
      // Every hook call with its binding and decision, not only denials: the allowing policy
      // hook's clean `none` at the shell call's decision point and after it.
      expect(
        lines.filter((l) => /^hook audit on on-shell → none, [\d.]+ ms$/.test(l)),
        all,
      ).toHaveLength(2);
      expect(
        lines.some((l) => /^hook guard on on-tool-call → deny, [\d.]+ ms$/.test(l)),
        all,
      ).toBe(true);
      expect(
        lines.some((l) => /^turn 2: claude-test → tool printf — \d+ in \/ \d+ out tokens, \d+ ms$/.test(l)),
        all,
      ).toBe(true);
      expect(
        lines.some((l) => /^\$ printf hello-from-shell ✓ ok, \d+ ms \(exit 0\)$/.test(l)),
        all,
      ).toBe(true);
      expect(
        lines.some((l) => /^end: ok after 3 turn\(s\), [\d,]+ in \/ [\d,]+ out tokens$/.test(l)),
        all,
      ).toBe(true);
      // Each call once: the stream's tool-call artifacts say again what the records say.
      expect(lines.filter((l) => /echo/.test(l) && !l.startsWith('turn'))).toHaveLength(1);
    };
    expectSteps(await page.locator('#chat-log li').allTextContents());
    await page.locator('#tasks li').first().getByRole('button').click();
    await page.locator('body[data-timeline]').waitFor();
    const timeline = await page.locator('#timeline-list li').allTextContents();
    expectSteps(timeline);
    expect(timeline.slice(-2)).toEqual(['all done', 'task completed']);
    await screenshot(page, 'steps-timeline');
    await page.close();
  });
});
