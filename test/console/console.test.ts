/**
 * `mur console` against a real `mur serve` (the agent loop, real WASM components, the scripted
 * provider), in a real headless Chromium: the page lists the A2A URL it was given, the chat sends a
 * task and shows its streamed steps and answer, the task list shows the task, and its timeline
 * shows the tool call. And the guard of the local API: the per-run token, Host and Origin.
 * The Capsule views on a real API server (RBAC) are in test/operator/console.test.ts.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { capsule, closeAll, mur } from '../client/kit.ts';
import { openConsole } from '../../runtime/cli/console.ts';
import type { RunningConsole } from '../../runtime/console/server.ts';
import { CHROMIUM_INSTALL_TIMEOUT_MS, launchBrowser, screenshot } from '../support/browser.ts';

let browser: Browser;
let con: RunningConsole;
let servedUrl: string;

beforeAll(async () => {
  browser = await launchBrowser();
}, CHROMIUM_INSTALL_TIMEOUT_MS);

beforeAll(async () => {
  const { served } = await capsule('console', {
    turns: [
      { toolCalls: [{ name: 'echo', input: { text: 'from the console' } }] },
      { text: 'the console answer' },
      { toolCalls: [{ name: 'echo', input: { text: 'from the terminal' } }] },
      { text: 'the terminal answer' },
    ],
  });
  servedUrl = served.url;
  const lines: string[] = [];
  // No cluster (a kubeconfig that is not there): the console serves the URL it was given.
  const c = await openConsole(
    [servedUrl, '--kubeconfig', '/nonexistent/kubeconfig'],
    (s) => lines.push(s),
    () => {},
  );
  con = c!;
  expect(lines).toEqual([`mur console at ${con.url}`]);
});

afterAll(async () => {
  await browser?.close();
  await con?.close();
  await closeAll();
});

/** A raw request, so Host and Origin are exactly what the test says (fetch sets Host itself). */
function raw(path: string, headers: Record<string, string>): Promise<{ status: number; body: { error?: string; code?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: con.port, path, headers }, (res) => {
      let s = '';
      res.on('data', (d: Buffer) => (s += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(s) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('mur console with a mur serve capsule', () => {
  it('lists the A2A URL, chats a task with streamed steps and answer, lists the task and shows its tool call in the timeline', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(con.url);
    const row = page.getByRole('button', { name: servedUrl });
    await row.waitFor();
    // The token left the address bar; the tab keeps it.
    expect(page.url()).toBe(`http://127.0.0.1:${con.port}/`);
    await expect.poll(() => page.locator('#capsules-note').textContent()).toContain('no cluster: cannot load the kubeconfig (/nonexistent/kubeconfig)');
    await screenshot(page, 'url-agents');

    await row.click();
    await page.locator('body[data-tasks="loaded"]').waitFor();
    await expect.poll(() => page.locator('#tasks').textContent()).toContain('no tasks of yours yet');
    await page.getByLabel('Message').fill('say something');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('body[data-chat="done"]').waitFor();
    const log = await page.locator('#chat-log li').allTextContents();
    expect(log[0]).toBe('say something');
    // With the capsule's trace records on the stream, a turn says its model and tokens
    // ("turn 1: claude-test → tool echo — 155 in / 50 out tokens, 417 ms"); without, its number.
    expect(
      log.some((l) => /^turn 1(: claude-test → tool echo — \d+ in \/ \d+ out tokens, \d+ ms)?$/.test(l)),
      JSON.stringify(log),
    ).toBe(true);
    expect(log.some((l) => /^echo ✓ ok, \d+ ms$/.test(l))).toBe(true);
    expect(log.some((l) => /^turn 2\b/.test(l))).toBe(true);
    expect(log).toContain('the console answer');
    expect(log, JSON.stringify(log)).toContain('task completed');
    await screenshot(page, 'url-chat');

    // The task list was reloaded after the chat: the task is there, completed with its answer.
    const task = page.locator('#tasks li').first();
    await expect.poll(() => task.textContent()).toMatch(/^[0-9a-f-]{36} completed — the console answer$/);
    const taskId = (await task.getAttribute('data-task'))!;
    await task.getByRole('button').click();
    await page.locator(`body[data-timeline="${taskId}"]`).waitFor();
    const timeline = await page.locator('#timeline-list li').allTextContents();
    // Sent from this console: the steps as its stream carried them, the chat's own lines.
    expect(await page.locator('#timeline-source').textContent()).toBe('the steps as this console saw them streamed');
    expect(timeline[0]).toBe('say something');
    expect(
      timeline.some((l) => /^turn 1\b/.test(l)),
      JSON.stringify(timeline),
    ).toBe(true);
    expect(timeline.some((l) => /^echo ✓ ok, \d+ ms$/.test(l))).toBe(true);
    expect(timeline.at(-2)).toBe('the console answer');
    expect(timeline.at(-1)).toBe('task completed');
    await screenshot(page, 'url-timeline');

    // A task sent by someone else (mur send, the same caller): what the task itself keeps.
    const other = await mur(['send', servedUrl, 'from the terminal', '--json']);
    expect(other.code, other.err).toBe(0);
    const otherId = JSON.parse(other.out).taskId as string;
    await page.getByRole('button', { name: 'Refresh tasks' }).click();
    const otherItem = page.locator(`#tasks li[data-task="${otherId}"]`);
    await otherItem.getByRole('button').click();
    await page.locator(`body[data-timeline="${otherId}"]`).waitFor();
    expect(await page.locator('#timeline-source').textContent()).toMatch(/^what the task keeps: its messages, tool calls and answer/);
    const kept = await page.locator('#timeline-list li').allTextContents();
    expect(kept[0]).toBe('from the terminal');
    expect(
      kept.some((l) => /^echo ✓ ok, \d+ ms$/.test(l)),
      JSON.stringify(kept),
    ).toBe(true);
    expect(kept.at(-1)).toBe('task completed');
    await page.close();
  });

  it('refuses API calls without the per-run token, from another origin, or for another Host (E-CLI-052)', async () => {
    const host = `127.0.0.1:${con.port}`;
    const token = { 'x-mur-console-token': con.token };
    expect((await raw('/api/agents', { host, ...token })).status).toBe(200);
    const none = await raw('/api/agents', { host });
    expect(none).toEqual({
      status: 401,
      body: { error: "missing or wrong x-mur-console-token header (the console's URL carries the token)", code: 'E-CLI-052' },
    });
    expect((await raw('/api/agents', { host, 'x-mur-console-token': 'guess' })).status).toBe(401);
    const foreign = await raw('/api/agents', { host, ...token, origin: 'http://evil.example' });
    expect(foreign).toEqual({ status: 403, body: { error: "requests from origin 'http://evil.example' are not accepted", code: 'E-CLI-052' } });
    // A DNS-rebound name reaches 127.0.0.1 but says its own name in Host.
    const rebound = await raw('/', { host: `rebound.example:${con.port}` });
    expect(rebound.status).toBe(421);
    expect(rebound.body.code).toBe('E-CLI-052');
  });

  it('calls only the A2A URLs it was given (E-CLI-051)', async () => {
    const r = await raw(`/api/tasks?agent=${encodeURIComponent('url:http://127.0.0.1:9/')}`, {
      host: `127.0.0.1:${con.port}`,
      'x-mur-console-token': con.token,
    });
    expect(r).toEqual({
      status: 400,
      body: {
        error: "agent 'http://127.0.0.1:9/' was not named on the mur console command line",
        code: 'E-CLI-051',
        hint: 'mur console <A2A URL>… names the URLs the console may call',
      },
    });
  });

  it('mur --help lists console; mur console takes A2A URLs only as arguments (E-CLI-050)', async () => {
    expect((await mur(['--help'])).out).toMatch(/console \[<A2A URL>\.\.\.\]\n +a web page on 127\.0\.0\.1/);
    expect((await mur(['console', '--help'])).out).toContain('mur console [<A2A URL>...] [--port N]');
    const r = await mur(['console', 'capsule/assistant', '--kubeconfig', '/nonexistent/kubeconfig']);
    expect(r.code).toBe(1);
    expect(r.err).toContain("argument 1 'capsule/assistant' is not an A2A URL [E-CLI-050]");
  });
});
