/**
 * What an idle `mur serve` holds (issue 18: a pod's memory is what a cluster pays per capsule):
 * going idle its component thread keeps the small driver and lets the JavaScript-engine tool go
 * (host/thread.ts), the token tables go, and the freed memory is given back, saying so in one
 * line; the next task reads the tables back and counts exactly as before; and
 * a capsule whose provider speaks plain http never loads node:https / node:tls.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { printed, serve, type Served } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const TURNS = [{ toolCalls: [{ name: ECHO_TOOL.name, input: { data: 'tick' } }] }, { text: 'the same answer' }];

async function served(name: string, env: Record<string, string>): Promise<{ s: Served; workRoot: string }> {
  const provider = await startScriptedProvider({ turns: [...TURNS, ...TURNS] });
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  const capsule = tmp(`idle-${name}-`);
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    capsuleYaml({ name, tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }),
  );
  const workRoot = tmp('idle-work-');
  const s = await serve(capsule, { registry, workRoot, env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY, ...env } });
  cleanup.push(
    () => s.stop(),
    () => provider.stop(),
  );
  return { s, workRoot };
}

/** input/output tokens the runtime counted for each inference turn, in order. */
function countedTurns(s: Served, workRoot: string): [number, number][] {
  const id = /session (ses_[0-9a-f]{32})/.exec(s.output())![1]!;
  return readTrace(join(workRoot, id, 'trace.jsonl'))
    .events.filter((e) => e.event_type === 'inference')
    .map((e) => [Number((e as Record<string, unknown>).input_tokens), Number((e as Record<string, unknown>).output_tokens)]);
}

describe('an idle mur serve', () => {
  it("collects its component thread's garbage (the large tool let go), lets the token tables go, gives the freed memory back, and the next task counts as before", async () => {
    const { s, workRoot } = await served('idler', { MURMUR_COMPONENT_IDLE_MS: '200', MURMUR_TOKEN_TABLES_IDLE_MS: '200', MURMUR_TOKEN_WORKER_IDLE_MS: '100' });
    const first = await sendMessage({ peerUrl: s.url, text: 'count me', allow: [s.url], wait: true });
    expect(first.ok && first.state).toBe('completed');
    const out = await printed(s, /^idle \([^)]*component thread garbage[^)]*\): RSS/m, /^idle \([^)]*token tables[^)]*\): RSS/m);
    const idleLines = out.split('\n').filter((l) => l.startsWith('idle ('));
    for (const line of idleLines) {
      expect(line).not.toMatch(/not built/);
      const [, before, after] = /RSS (\d+\.\d) → (\d+\.\d) MiB$/.exec(line)!;
      expect(Number(after)).toBeLessThanOrEqual(Number(before));
    }
    const thread = idleLines.find((l) => l.includes('component thread'))!;
    const [, before, after] = /RSS (\d+\.\d) → (\d+\.\d) MiB$/.exec(thread)!.map(Number);
    expect(after).toBeLessThan(before!);

    const second = await sendMessage({ peerUrl: s.url, text: 'count me', allow: [s.url], wait: true });
    expect(second.ok && second.state).toBe('completed');
    expect(second.ok && second.text).toBe(first.ok && first.text);
    const turns = countedTurns(s, workRoot);
    expect(turns).toHaveLength(4);
    expect(turns.slice(2)).toEqual(turns.slice(0, 2));
  });

  it('never loads node:https or node:tls when its provider speaks plain http', async () => {
    const dir = tmp('idle-modules-');
    const list = join(dir, 'modules.txt');
    const preload = join(dir, 'record.mjs');
    writeFileSync(
      preload,
      `process.on('exit', () => process.getBuiltinModule('node:fs').writeFileSync(${JSON.stringify(list)}, process.moduleLoadList.join('\\n')));\n`,
    );
    const { s } = await served('plain', { NODE_OPTIONS: `--import ${preload}` });
    const done = await sendMessage({ peerUrl: s.url, text: 'one task', allow: [s.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    await s.stop();
    const loaded = readFileSync(list, 'utf8').split('\n');
    expect(loaded).toContain('NativeModule http');
    expect(loaded.filter((m) => /^NativeModule (https|tls|_tls_wrap)$/.test(m))).toEqual([]);
  });
});
