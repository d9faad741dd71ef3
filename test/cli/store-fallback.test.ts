/**
 * E-STORE-004: where the embedded SQLite engine (better-sqlite3, a native addon) cannot load, the
 * default store of `mur serve` gives way to memory and says so, and an explicit SQLite store stops
 * it. The addon is made unloadable the way Node itself can: `--no-addons` (process.dlopen then
 * throws, as with an install that skipped the addon's build). Real processes, real HTTP.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { serve } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

async function capsule(): Promise<{ dir: string; registry: string }> {
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  const dir = tmp('fallback-');
  writeFileSync(join(dir, 'murmur.yaml'), capsuleYaml({ name: 'nosqlite', tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n' }));
  return { dir, registry };
}

describe('mur serve without the SQLite engine (E-STORE-004)', () => {
  it('the default store falls back to memory, says so with E-STORE-004 and serves tasks', async () => {
    const c = await capsule();
    const provider = await startScriptedProvider([{ text: 'answered from memory' }]);
    cleanup.push(() => provider.stop());
    const s = await serve(c.dir, {
      registry: c.registry,
      workRoot: tmp('fallback-work-'),
      env: { NODE_OPTIONS: '--no-addons', MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    });
    cleanup.push(() => s.stop());
    expect(s.output()).toMatch(
      /store: memory \(tasks and conversations do not survive a restart\): the embedded SQLite engine \(better-sqlite3\) cannot be loaded: [^\n]*\[E-STORE-004\]/,
    );
    const done = await sendMessage({ peerUrl: s.url, text: 'hello', allow: [s.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    if (!done.ok) return;
    const got = await getTask({ peerUrl: s.url, taskId: done.taskId, allow: [s.url] });
    expect(got.ok && got.text).toBe('answered from memory');
    await s.stop();
    expect(await s.exited).toBe(0);
  }, 240_000);

  it('an explicit SQLite --store is never swapped for memory: mur serve stops with E-STORE-004 before it serves', async () => {
    const c = await capsule();
    const file = join(tmp('fallback-store-'), 'tasks.db');
    await expect(
      serve(c.dir, { registry: c.registry, workRoot: tmp('fallback-work-'), env: { NODE_OPTIONS: '--no-addons' }, args: ['--store', file] }),
    ).rejects.toThrow(/better-sqlite3[^\n]*cannot be loaded[^\n]*E-STORE-004|E-STORE-004[^\n]*better-sqlite3/);
  }, 240_000);
});
