/**
 * End-to-end kit: a registry built from real components, a capsule folder, the scripted provider,
 * and a staged + opened session — the same path `mur run` takes.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publish } from '../../runtime/registry/registry.ts';
import { tmp } from '../registry/helpers.ts';
import { stage, openSession } from '../../runtime/compose/open.ts';
import type { CapsuleSession } from '../../runtime/loop/capsule-session.ts';
import { fixture } from '../fixtures/build.ts';
import { startScriptedProvider, type Script, type ScriptedProvider } from '../provider/scripted-provider.ts';

export const API_KEY = 'test-key-not-secret';

export interface ArtifactDef {
  /** Component (fixture) name. */
  component: string;
  name: string;
  version?: string;
  runtime: 'tool' | 'driver' | 'hook';
  /** Extra artifact-manifest YAML. */
  extra?: string;
}

export { tmp };

export async function makeRegistry(defs: ArtifactDef[], registry = tmp('reg-')): Promise<string> {
  for (const d of defs) {
    const src = tmp(`art-${d.name}-`);
    writeFileSync(
      join(src, 'murmur.yaml'),
      `name: ${d.name}\nversion: ${d.version ?? '1.0.0'}\nruntime: ${d.runtime}\ndescription: The ${d.name} ${d.runtime}.\n${d.extra ?? ''}`,
    );
    writeFileSync(join(src, 'component.wasm'), readFileSync(await fixture(d.component)));
    publish(registry, src);
  }
  return registry;
}

export const ECHO_TOOL: ArtifactDef = {
  component: 'echo-tool',
  name: 'echo',
  runtime: 'tool',
  extra: 'input_schema:\n  type: object\n  properties:\n    text: {type: string}\n',
};

/** A provider script for two tasks, each an echo tool call and an answer. */
export const TWO_TASKS = {
  turns: [
    { toolCalls: [{ name: 'echo', input: { text: 'first' } }] },
    { text: 'answer 1' },
    { toolCalls: [{ name: 'echo', input: { text: 'second' } }] },
    { text: 'answer 2' },
  ],
};

/** The sandbox probe as a tool: its input is the probe's `{op, ...}` request. */
export const PROBE_TOOL: ArtifactDef = { component: 'sandbox-probe', name: 'probe', runtime: 'tool', extra: 'input_schema: {type: object}\n' };

export function driverDef(api: 'anthropic' | 'openai'): ArtifactDef {
  return { component: `driver-${api}`, name: `driver-${api}`, version: '0.1.0', runtime: 'driver' };
}

export function capsuleYaml(
  o: { name?: string; api?: 'anthropic' | 'openai'; tools?: string[]; extra?: string; shell?: string[]; inference?: string } = {},
): string {
  const api = o.api ?? 'anthropic';
  const tools = o.tools ?? ['echo'];
  return [
    `name: ${o.name ?? 'kit-capsule'}`,
    'version: 1.0.0',
    'artifacts:',
    `  - {name: driver-${api}, version: 0.1.0, runtime: driver}`,
    ...tools.map((t) => `  - {name: ${t}, version: 1.0.0, runtime: tool}`),
    ...(o.shell ? ['capabilities:', '  shell:', `    allow: [${o.shell.join(', ')}]`] : []),
    'inference:',
    `  driver: {artifact: driver-${api}}`,
    `  model: ${api === 'anthropic' ? 'claude-test' : 'gpt-test'}`,
    ...(o.inference ? [o.inference] : []),
    o.extra ?? '',
  ].join('\n');
}

export interface Kit {
  provider: ScriptedProvider;
  capsuleDir: string;
  registry: string;
  workRoot: string;
  session: CapsuleSession;
  close(status?: string): Promise<void>;
}

export async function openKit(o: {
  script: Script;
  yaml: string;
  artifacts: ArtifactDef[];
  api?: 'anthropic' | 'openai';
  files?: Record<string, string>;
  env?: Record<string, string>;
}): Promise<Kit> {
  const provider = await startScriptedProvider(o.script);
  const registry = await makeRegistry(o.artifacts);
  const capsuleDir = tmp('capsule-');
  writeFileSync(join(capsuleDir, 'murmur.yaml'), o.yaml);
  for (const [f, text] of Object.entries(o.files ?? {})) {
    mkdirSync(join(capsuleDir, f, '..'), { recursive: true });
    writeFileSync(join(capsuleDir, f), text);
  }
  const workRoot = tmp('work-');
  const api = o.api ?? 'anthropic';
  const hostEnv = {
    PATH: process.env.PATH,
    MURMUR_INFERENCE_ENDPOINT: api === 'anthropic' ? provider.url : `${provider.url}/v1`,
    MURMUR_INFERENCE_API_KEY: API_KEY,
    ...o.env,
  };
  const staged = await stage({ capsuleDir, registryDir: registry, workRoot, hostEnv });
  const session = await openSession(staged, { hostEnv });
  return {
    provider,
    capsuleDir,
    registry,
    workRoot,
    session,
    async close(status = 'ok') {
      await session.close(status);
      await provider.stop();
    },
  };
}

/** What a test opened and its teardown closes: the kit, the session's telemetry, an OTLP receiver. */
export interface Opened {
  kit?: Kit | undefined;
  tel?: { shutdown(timeoutMs?: number): Promise<void> } | undefined;
  receiver?: { close(): Promise<void> } | undefined;
}

/**
 * The telemetry tests' teardown, for their `afterEach`: closes what the test `opened` — the kit (a
 * close that fails does not hide the test's own result), then its telemetry (flushing the spans the
 * session's close ended; `shutdownMs` bounds it), then the receiver they went to — each once, so
 * the next test, if it opens nothing, closes nothing twice. It returns the hook rather than
 * registering it: the benches load this file too, without vitest.
 */
export function closeOpened(opened: () => Opened, o: { shutdownMs?: number } = {}): () => Promise<void> {
  const closed = new WeakSet<object>();
  const once = <T extends object>(x: T | undefined): T | undefined => {
    if (!x || closed.has(x)) return undefined;
    closed.add(x);
    return x;
  };
  return async () => {
    const { kit, tel, receiver } = opened();
    const closing = once(kit)?.close();
    await closing?.catch(() => {});
    await once(tel)?.shutdown(o.shutdownMs);
    await once(receiver)?.close();
  };
}
