/**
 * A first `mur serve` (no component transpiled yet): it transpiles its components in its own
 * process before it loads the server, the store and the agent loop (host/transpile-ahead.ts: a
 * first run's peak memory), then serves as ever.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { serve } from './serve-kit.ts';
import { startPackages } from './start-packages.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

describe('a first mur serve', () => {
  it('transpiles its driver and tool in its own process before it opens its store, then serves a task', async () => {
    const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: ECHO_TOOL.name, input: { text: 'tick' } }] }, { text: 'first answer' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const capsule = tmp('first-run-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'first', tools: [ECHO_TOOL.name] }));
    const cache = tmp('first-run-cache-');
    const s = await serve(capsule, {
      registry,
      workRoot: tmp('first-run-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY, MURMUR_COMPONENT_CACHE: cache },
    });
    cleanup.push(() => s.stop());
    const lines = s.output().split('\n');
    const transpiled = lines.findIndex((l) => /^transpiled .* before start, in this process \(\d+\.\d\d s\)$/.test(l));
    expect(transpiled, s.output()).toBeGreaterThanOrEqual(0);
    expect(lines[transpiled]!.split(' before')[0]!.slice('transpiled '.length).split(', ').sort()).toEqual(['driver-anthropic', 'echo']);
    expect(transpiled).toBeLessThan(lines.findIndex((l) => l.startsWith('store: ')));
    expect(readdirSync(cache)).toHaveLength(2);
    const r = await sendMessage({ peerUrl: s.url, text: 'go', allow: [s.url], wait: true });
    expect(r.ok && r.state).toBe('completed');
  }, 180_000);

  it('loads none of the server, store, telemetry or agent loop before that transpile: serve.ts imports them only afterwards', async () => {
    const { atStart, later } = await startPackages(fileURLToPath(new URL('../../runtime/cli/serve.ts', import.meta.url)));
    const serving = ['express', '@a2a-js/sdk/server', 'kysely', 'better-sqlite3', 'prom-client', '@opentelemetry/api'];
    const within = (set: Set<string>, p: string): boolean => [...set].some((x) => x === p || x.startsWith(`${p}/`));
    expect(serving.filter((p) => within(atStart, p))).toEqual([]);
    expect(serving.filter((p) => within(later, p))).toEqual(serving);
  });
});
