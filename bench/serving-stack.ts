/**
 * The serving stack the whole-stack benches start (stack.ts, polling.ts, soak.ts, task-cpu.ts): a
 * capsule of the real anthropic driver (and the echo tool) with queue acceptance and the local
 * registry that holds its components, and `mur serve` of it against a scripted provider over real
 * HTTP. One place, so every bench serves the same capsule wired the same way and differs only in
 * what it measures.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../test/loop/kit.ts';
import { startScriptedProvider, type Script, type ScriptedProvider, type StartOptions } from '../test/provider/scripted-provider.ts';
import { serve, type MurOptions, type Serving } from './serving.ts';

export interface StackCapsule {
  /** The local registry holding the driver (and the echo tool). */
  registry: string;
  /** The capsule folder (its murmur.yaml). */
  capsule: string;
}

/**
 * A capsule named `name` with the real anthropic driver, the echo tool when `echo`, and queue
 * acceptance of `queueDepth` (a bench's senders queue instead of being refused), in a fresh temp
 * folder beside a fresh registry of its components.
 */
export async function stackCapsule(name: string, o: { echo: boolean; queueDepth: number }): Promise<StackCapsule> {
  const registry = await makeRegistry(o.echo ? [driverDef('anthropic'), ECHO_TOOL] : [driverDef('anthropic')]);
  const capsule = tmp(`${name}-capsule-`);
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    capsuleYaml({ name, tools: o.echo ? ['echo'] : [], extra: `lifecycle:\n  task_acceptance: queue\n  queue_depth: ${o.queueDepth}\n` }),
  );
  return { registry, capsule };
}

/** The environment that sends a served capsule's inference to `providerUrl` (the scripted provider's key) and keeps its transpiled components in `cache`. */
export function providerEnv(providerUrl: string, cache: string): Record<string, string> {
  return { MURMUR_INFERENCE_ENDPOINT: providerUrl, MURMUR_INFERENCE_API_KEY: API_KEY, MURMUR_COMPONENT_CACHE: cache };
}

export interface ServedStack extends Serving {
  provider: ScriptedProvider;
}

/**
 * A scripted provider of its own (`script`, holding requests to API_KEY) and `mur serve` of
 * `stack` against it from `from`, with `env` laid over the provider's environment; `stop()` ends
 * the process, then the provider. `t0` is taken once the provider is up, as the process starts.
 */
export async function serveStack(
  from: 'src' | 'dist',
  stack: StackCapsule,
  script: Omit<Script, 'apiKey'>,
  o: { cache: string; env?: Record<string, string>; provider?: StartOptions } & MurOptions,
): Promise<ServedStack> {
  const { cache, env = {}, provider: providerOpts, ...mur } = o;
  const provider = await startScriptedProvider({ ...script, apiKey: API_KEY }, providerOpts);
  const s = serve(from, stack.capsule, stack.registry, { ...providerEnv(provider.url, cache), ...env }, [], mur);
  return {
    ...s,
    provider,
    async stop() {
      await s.stop();
      await provider.stop();
    },
  };
}
