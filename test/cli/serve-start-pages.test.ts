/**
 * A serving process lets the Node binary's pages go once its start is over (runtime/cli/
 * serve-start-pages.ts): serving, its warm-up done, nothing called yet; then it serves tasks as
 * before. A real `mur serve` in a process of its own (the C driver and the echo tool, a scripted
 * provider), and the rule itself on a real activity tracker and the real addon.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { startPagesGo } from '../../runtime/cli/serve-start-pages.ts';
import { addonPath } from '../../runtime/native-addon.ts';
import { ActivityTracker } from '../../runtime/telemetry/activity.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { printed, serve } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const READY = /^ready: \d+\.\d MiB of the Node binary's pages let go \(the start's; the page cache keeps them\)$/m;

describe('a mur serve whose start is over', () => {
  it("lets the start's pages of the Node binary go once it serves and its warm-up is done, then serves a task", async () => {
    if (!addonPath()) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: ECHO_TOOL.name, input: { data: 'tick' } }] }, { text: 'done' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const capsule = tmp('start-pages-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'start-pages', tools: [ECHO_TOOL.name] }));
    const s = await serve(capsule, {
      registry,
      workRoot: tmp('start-pages-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    });
    cleanup.push(() => s.stop());
    const lines = (await printed(s, READY)).split('\n');
    // Once, and after the start-up line: the start is over.
    expect(lines.filter((l) => READY.test(l))).toHaveLength(1);
    expect(lines.findIndex((l) => READY.test(l))).toBeGreaterThan(lines.findIndex((l) => l.startsWith('start-up: ')));
    const done = await sendMessage({ peerUrl: s.url, text: 'one task', allow: [s.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    expect(done.ok && done.text).toBe('done');
  });

  it('waits for the warm-up before it lets them go, and keeps them when the capsule was called before the warm-up was done', async () => {
    if (!addonPath()) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
    let warmed!: () => void;
    const warmUp = new Promise<void>((r) => (warmed = r));
    const lines: string[] = [];
    const quiet = startPagesGo(warmUp, new ActivityTracker(), (l) => lines.push(l));
    await Promise.resolve();
    expect(lines).toEqual([]);
    warmed();
    expect(await quiet).toEqual(expect.any(Number));
    expect(lines).toEqual([expect.stringMatching(READY)]);

    const called = new ActivityTracker();
    const out: string[] = [];
    const kept = startPagesGo(Promise.resolve(), called, (l) => out.push(l));
    called.begin()(); // a request, begun and ended before the warm-up was over
    expect(await kept).toBeUndefined();
    expect(out).toEqual([]);
  });
});
