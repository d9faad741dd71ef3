/**
 * A serving process gives freed memory back within a moment of going quiet, keeping its component
 * thread (issue 37 §2: private memory in the 30 s after a task): `mur serve` with the built-in
 * anthropic driver and a tool, after one task, settles once its component thread has had no call
 * for MURMUR_SETTLE_MS — garbage collected in both isolates, `malloc_trim` — and says so in one
 * line, long before the idle release (MURMUR_COMPONENT_IDLE_MS, 30 s) and without letting anything
 * go; the next task answers as the first did.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { printed, serve } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const TURNS = [{ toolCalls: [{ name: ECHO_TOOL.name, input: { data: 'tick' } }] }, { text: 'the same answer' }];
const SETTLED = /^settled \(component thread quiet\): RSS (\d+\.\d) → (\d+\.\d) MiB in \d+ ms \(\+ \d+ ms in the component thread\)$/m;

describe('a serving process gone quiet after a task', () => {
  it('gives freed memory back within MURMUR_SETTLE_MS of its last component call, keeping its component thread, and answers the next task as before', async () => {
    const provider = await startScriptedProvider({ turns: [...TURNS, ...TURNS] });
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const capsule = tmp('settle-');
    writeFileSync(
      join(capsule, 'murmur.yaml'),
      capsuleYaml({ name: 'settler', tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }),
    );
    const s = await serve(capsule, {
      registry,
      workRoot: tmp('settle-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY, MURMUR_SETTLE_MS: '300' },
    });
    cleanup.push(
      () => s.stop(),
      () => provider.stop(),
    );
    const first = await sendMessage({ peerUrl: s.url, text: 'one', allow: [s.url], wait: true });
    expect(first.ok && first.state).toBe('completed');
    // The settle after the task (the pre-warm, before it, may have settled once too: the last line counts).
    const from = s.output().length;
    await printed({ ...s, output: () => s.output().slice(from) }, SETTLED);
    const out = s.output().slice(from);
    const [, before, after] = SETTLED.exec(out)!.map(Number);
    expect(out).not.toMatch(/not built/);
    expect(after).toBeLessThanOrEqual(before!);
    // Nothing was let go: no idle release (the thread's 30 s have not passed).
    expect(s.output()).not.toMatch(/^idle \(/m);

    const second = await sendMessage({ peerUrl: s.url, text: 'two', allow: [s.url], wait: true });
    expect(second.ok && second.state).toBe('completed');
    expect(second.ok && second.text).toBe(first.ok && first.text);
  });
});
