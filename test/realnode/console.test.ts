// Issue 41 §2 on the real node: `mur console` with the user's kubeconfig, in a real headless
// Chromium — the page lists the quickstart Capsule, a chat completes a task on its pod (a token
// for its URL and a port-forward, as mur send does) against the scripted provider, the task list
// shows the task and its timeline shows the shell tool call; a screenshot of each view is saved
// under .cache/console-screenshots/. The RBAC views are in test/operator/console.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { parse, stringify } from 'yaml';
import { openConsole } from '../../runtime/cli/console.ts';
import type { RunningConsole } from '../../runtime/console/server.ts';
import { CHROMIUM_INSTALL_TIMEOUT_MS, launchBrowser, screenshot } from '../support/browser.ts';
import { apiKeySecret, apply, createNamespace, deleteNamespace, kubeconfig, providerPod, readExample, waitFor } from './support.ts';

// The shell call's line: `echo ✓ ok, 12 ms` from the stream's tool-call artifact, or, when the
// capsule streams its trace records, `$ echo hello from the console ✓ ok, 12 ms (exit 0)`.
const SHELL_LINE = /^(echo|\$ echo\b.*) ✓ ok, \d+ ms( \(exit 0\))?$/;

describe('mur console on the real node', () => {
  const ns = 'rn-console';
  let browser: Browser;
  let con: RunningConsole;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, CHROMIUM_INSTALL_TIMEOUT_MS);
  // biome-ignore lint/suspicious/noDuplicateTestHooks: two hooks on purpose, so the browser install keeps its own, longer timeout
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
    const provider = await providerPod(ns, {
      turns: [{ toolCalls: [{ name: 'echo', input: { command: 'hello from the console' } }] }, { text: 'The pod echoed it.' }],
    });
    const capsule = parse(readExample('quickstart.yaml'));
    capsule.metadata.namespace = ns;
    capsule.spec.inference.endpoint = provider;
    await apply(stringify(capsule));
    await waitFor(ns, 'capsule/assistant', 'condition=Ready', '180s');
    con = (await openConsole(
      ['--kubeconfig', kubeconfig()],
      () => {},
      () => {},
    ))!;
  });
  afterAll(async () => {
    await browser?.close();
    await con?.close();
    await deleteNamespace(ns);
  });

  it('lists the quickstart Capsule, chats a task to its pod, lists the task and shows its shell call in the timeline', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(con.url);
    await page.locator('body[data-loaded="capsules"]').waitFor();
    const row = await page.locator(`tr[data-ref="capsule:${ns}/assistant"] td`).allTextContents();
    expect(row.slice(0, 4)).toEqual([`${ns}/assistant`, 'True (Available)', '1/1', 'claude-sonnet-4-5']);
    await screenshot(page, 'realnode-capsules');

    await page.getByRole('button', { name: `${ns}/assistant` }).click();
    await page.locator('body[data-tasks="loaded"]').waitFor();
    await page.getByLabel('Message').fill('Echo a greeting.');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('body[data-chat="done"]').waitFor({ timeout: 120_000 });
    const log = await page.locator('#chat-log li').allTextContents();
    expect(
      log.some((l) => SHELL_LINE.test(l)),
      JSON.stringify(log),
    ).toBe(true);
    expect(log).toContain('The pod echoed it.');
    expect(log.at(-1)).toBe('task completed');
    await screenshot(page, 'realnode-chat');

    const task = page.locator('#tasks li').first();
    await expect.poll(() => task.textContent()).toMatch(/ completed — The pod echoed it\.$/);
    const taskId = (await task.getAttribute('data-task'))!;
    await task.getByRole('button').click();
    await page.locator(`body[data-timeline="${taskId}"]`).waitFor();
    const timeline = await page.locator('#timeline-list li').allTextContents();
    expect(timeline[0]).toBe('Echo a greeting.');
    expect(
      timeline.some((l) => SHELL_LINE.test(l)),
      JSON.stringify(timeline),
    ).toBe(true);
    expect(timeline.at(-1)).toBe('task completed');
    await screenshot(page, 'realnode-timeline');
    await page.close();
  });
});
