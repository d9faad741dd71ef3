/**
 * What a sleeping Capsule relies on (issue 37 §1, "nothing is lost across sleep"), on the stop that
 * sleep makes: the pod's SIGTERM (a graceful drain), then a new process on the same durable store.
 * The kill -9 cases are in durable.test.ts. Real `mur serve` processes on a real SQLite file.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, PROBE_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn } from '../provider/scripted-provider.ts';
import { rpc, V1 } from '../a2a/helpers.ts';
import { serve } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

let capsuleDir: { dir: string; registry: string } | undefined;
async function capsule(): Promise<{ dir: string; registry: string }> {
  if (capsuleDir) return capsuleDir;
  const registry = await makeRegistry([driverDef('anthropic'), PROBE_TOOL]);
  const dir = tmp('sleep-restart-');
  const lifecycle = 'lifecycle:\n  conversation: threaded\n  task_acceptance: queue\n';
  writeFileSync(join(dir, 'murmur.yaml'), capsuleYaml({ name: 'napper', tools: [PROBE_TOOL.name], extra: lifecycle }));
  capsuleDir = { dir, registry };
  return capsuleDir;
}

/** `mur serve` of the capsule on `store`, answering from `turns`; its drain budget is 1 s. */
async function served(store: string, turns: ScriptTurn[]) {
  const c = await capsule();
  const provider = await startScriptedProvider(turns);
  const s = await serve(c.dir, {
    registry: c.registry,
    workRoot: tmp('sleep-restart-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--store', store, '--drain-secs', '1'],
  });
  cleanup.push(
    () => s.stop(),
    () => provider.stop(),
  );
  return { s, provider };
}

describe('across a SIGTERM stop and a restart on the same store (what sleep does to a pod)', () => {
  it('finished tasks answer tasks/get and ListTasks as before, and a threaded context continues with its history', async () => {
    const store = join(tmp('sleep-restart-store-'), 'tasks.db');
    const one = await served(store, [{ text: 'noted: lantern' }]);
    const first = await sendMessage({ peerUrl: one.s.url, text: 'remember the word lantern', allow: [one.s.url], wait: true });
    expect(first.ok && first.state).toBe('completed');
    if (!first.ok) return;
    const before = await rpc(one.s.url, 'GetTask', { id: first.taskId }, V1);
    one.s.proc.kill('SIGTERM');
    expect(await one.s.exited).toBe(0);

    const two = await served(store, [{ text: 'you said lantern' }]);
    expect(two.s.output()).not.toMatch(/unfinished task/);
    expect((await rpc(two.s.url, 'GetTask', { id: first.taskId }, V1)).body.result).toEqual(before.body.result);
    const listed = await rpc(two.s.url, 'ListTasks', { includeArtifacts: true, historyLength: 10 }, V1);
    expect(listed.body.result.tasks).toEqual([before.body.result]);
    const follow = await sendMessage({ peerUrl: two.s.url, text: 'which word?', contextId: first.contextId, allow: [two.s.url], wait: true });
    expect(follow.ok && follow.text).toBe('you said lantern');
    const sent = JSON.stringify(two.provider.requests.at(-1)!.body);
    expect(sent.indexOf('remember the word lantern')).toBeGreaterThanOrEqual(0);
    expect(sent.indexOf('noted: lantern')).toBeLessThan(sent.indexOf('which word?'));
  }, 240_000);

  it('a task waiting in input-required survives: the drain leaves it waiting, and the reply after the restart resumes the tool call and completes it', async () => {
    const store = join(tmp('sleep-restart-store-'), 'tasks.db');
    const one = await served(store, [{ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }]);
    const asked = await sendMessage({ peerUrl: one.s.url, text: 'paint it', allow: [one.s.url], wait: true });
    expect(asked.ok && asked.state).toBe('input-required');
    if (!asked.ok) return;
    one.s.proc.kill('SIGTERM');
    expect(await one.s.exited).toBe(0);
    // Its resume point is stored: the drain neither waits for it nor fails it.
    expect(one.s.output()).toMatch(/1 task\(s\) waiting for input left for the next start/);
    expect(one.s.output()).not.toMatch(/unfinished task\(s\) failed/);

    const two = await served(store, [{ text: 'painted blue' }]);
    expect(two.s.output()).toMatch(/1 task\(s\) left waiting for input before the restart: a reply resumes each/);
    const waiting = await getTask({ peerUrl: two.s.url, taskId: asked.taskId, allow: [two.s.url] });
    expect(waiting.ok && waiting.state).toBe('input-required');
    expect(waiting.ok && waiting.statusText).toBe('Which colour?');
    const reply = await sendMessage({ peerUrl: two.s.url, text: 'blue', taskId: asked.taskId, contextId: asked.contextId, allow: [two.s.url], wait: true });
    expect(reply.ok && [reply.state, reply.taskId, reply.contextId, reply.text]).toEqual(['completed', asked.taskId, asked.contextId, 'painted blue']);
    // The tool ran again and its request-input returned the reply: the provider got it as the tool's output.
    const sent = two.provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(sent.messages[0]!.content)).toContain('paint it');
    expect(JSON.stringify(sent.messages[2]!.content)).toMatch(/"tool_result".*blue/);
    expect(two.s.output()).toMatch(/▶ task \S+ resumed at probe/);
  }, 240_000);
});
