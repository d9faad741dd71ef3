/**
 * The capsule the steps tests share (test/client/steps.test.ts, test/console/console-steps.test.ts):
 * the echo tool, `printf` as a shell tool, a policy hook that denies echo and one that allows every
 * shell call, served by a real `mur serve` against the scripted provider.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from '../cli/serve-kit.ts';
import { type HookDef, hookArtifact } from '../hooks/hook-capsule.ts';
import { API_KEY, driverDef, ECHO_TOOL, makeRegistry, tmp } from '../loop/kit.ts';
import { type Script, startScriptedProvider } from '../provider/scripted-provider.ts';
import { cleanup } from './kit.ts';

export const GUARD: HookDef = {
  name: 'guard',
  contract: 'binding: on-tool-call\ncommit_policy: deny\n',
  script: { 'on-tool-call:decision': { ret: { tag: 'deny', val: 'echo is not allowed today' } } },
};

/** A policy hook on shell calls that allows every one (a clean `none` at the decision point). */
export const AUDIT: HookDef = { name: 'audit', contract: 'binding: on-shell\ncommit_policy: deny\n', script: {} };

/** A denied tool call, a shell call, then the answer; each turn with its usage. */
export const SCRIPT: Script = {
  turns: [
    { toolCalls: [{ name: 'echo', input: { text: 'q' } }], usage: { input: 110, output: 11 } },
    { toolCalls: [{ name: 'printf', input: { command: 'hello-from-shell' } }], usage: { input: 220, output: 22 } },
    { text: 'all done', usage: { input: 330, output: 33 } },
  ],
};

/** A capsule with the echo tool, `printf` as a shell tool, the denying and the allowing policy hook. */
export async function stepsCapsule(): Promise<{ dir: string; registry: string }> {
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL, hookArtifact(GUARD), hookArtifact(AUDIT)]);
  const dir = tmp('client-steps-');
  writeFileSync(
    join(dir, 'murmur.yaml'),
    [
      'name: steps',
      'version: 1.0.0',
      'artifacts:',
      '  - {name: driver-anthropic, version: 0.1.0, runtime: driver}',
      '  - {name: echo, version: 1.0.0, runtime: tool}',
      `  - {name: guard, version: 1.0.0, runtime: hook, config: ${JSON.stringify({ script: GUARD.script })}}`,
      `  - {name: audit, version: 1.0.0, runtime: hook, config: ${JSON.stringify({ script: AUDIT.script })}}`,
      'capabilities:',
      '  shell:',
      '    allow: [printf]',
      'inference:',
      '  driver: {artifact: driver-anthropic}',
      '  model: claude-test',
      '',
    ].join('\n'),
  );
  return { dir, registry };
}

export async function servedSteps(script: Script = SCRIPT): Promise<string> {
  const { dir, registry } = await stepsCapsule();
  const provider = await startScriptedProvider(script);
  const served = await serve(dir, {
    registry,
    workRoot: tmp('client-steps-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
  });
  cleanup.push(
    () => provider.stop(),
    () => served.stop(),
  );
  return served.url;
}
