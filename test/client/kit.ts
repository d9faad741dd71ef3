/** A real `mur serve` capsule on 127.0.0.1 with the scripted provider, for the `mur send/chat/tasks` tests. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_KEY, ECHO_TOOL, PROBE_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type Script, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { serve, type Served } from '../cli/serve-kit.ts';
import { main } from '../../runtime/cli/main.ts';

export const cleanup: (() => Promise<unknown>)[] = [];

export async function closeAll(): Promise<void> {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
}

export async function capsule(
  name: string,
  script: Script,
  o: { args?: string[]; lifecycle?: string } = {},
): Promise<{ served: Served; provider: ScriptedProvider }> {
  const provider = await startScriptedProvider(script);
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL, PROBE_TOOL]);
  const dir = tmp(`client-${name}-`);
  writeFileSync(
    join(dir, 'murmur.yaml'),
    capsuleYaml({ name, tools: ['echo', 'probe'], extra: `lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n${o.lifecycle ?? ''}` }),
  );
  const served = await serve(dir, {
    registry,
    workRoot: tmp('client-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    ...(o.args ? { args: o.args } : {}),
  });
  cleanup.push(
    () => provider.stop(),
    () => served.stop(),
  );
  return { served, provider };
}

export interface Run {
  code: number;
  out: string;
  err: string;
  lines: string[];
}

/**
 * `mur <args>` in this process; `env` is set for the call only. `onLine` sees each stdout line as
 * it is printed (a test that acts while the command runs waits on a line, never on time).
 */
export async function mur(args: string[], o: { env?: Record<string, string>; onLine?: (l: string) => void } = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const env = o.env ?? {};
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const code = await main(
      args,
      (s) => (out.push(s), o.onLine?.(s)),
      (s) => err.push(s),
    );
    return { code, out: out.join('\n'), err: err.join('\n'), lines: out };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
