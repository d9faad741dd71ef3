/** Sessions driven by the replay driver: canned driver responses, every request recorded. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stage, openSession } from '../../runtime/compose/open.ts';
import type { CapsuleSession } from '../../runtime/loop/capsule-session.ts';
import { makeRegistry, tmp, type ArtifactDef } from './kit.ts';
import { startRecorder, type Recorder } from './recorder.ts';

export interface ReplayResponse {
  data: unknown;
  metadata?: [string, string][];
  status?: string;
}

export const REPLAY_DRIVER: ArtifactDef = { component: 'driver-replay', name: 'driver-replay', version: '0.1.0', runtime: 'driver' };
export const DATAPATH_TOOL: ArtifactDef = { component: 'datapath-tool', name: 'datapath', runtime: 'tool' };

export function endTurn(text: string, extra: Record<string, unknown> = {}): ReplayResponse {
  return { data: { stop_reason: 'end_turn', content: [{ type: 'text', text }], ...extra } };
}

export function toolCall(
  name: string,
  input: Record<string, unknown>,
  id = `call_${name}_${Math.random().toString(16).slice(2, 8)}`,
  extra: Record<string, unknown> = {},
): ReplayResponse {
  return { data: { stop_reason: 'tool_call', content: [{ type: 'tool_call', id, name, input }], ...extra } };
}

export interface ReplayKit {
  session: CapsuleSession;
  recorder: Recorder;
  close(): Promise<void>;
}

/** A hook-script hook (test/fixtures/components/hook-script) with its contract and per-handler script. */
export interface ReplayHook {
  name: string;
  contract?: string;
  script: Record<string, unknown>;
}

export async function openReplay(o: {
  responses: ReplayResponse[];
  name?: string;
  tools?: ArtifactDef[];
  hooks?: ReplayHook[];
  files?: Record<string, string>;
  yamlExtra?: string;
  inferenceExtra?: string;
  shell?: string[];
}): Promise<ReplayKit> {
  const recorder = await startRecorder();
  const tools = o.tools ?? [];
  const hooks = o.hooks ?? [];
  const registry = await makeRegistry([
    REPLAY_DRIVER,
    ...tools,
    ...hooks.map((h) => ({ component: 'hook-script', name: h.name, runtime: 'hook' as const, extra: h.contract ?? '' })),
  ]);
  const capsuleDir = tmp('capsule-');
  const config = JSON.stringify({ responses: o.responses });
  writeFileSync(
    join(capsuleDir, 'murmur.yaml'),
    [
      `name: ${o.name ?? 'replay-capsule'}`,
      'version: 1.0.0',
      'artifacts:',
      '  - {name: driver-replay, version: 0.1.0, runtime: driver}',
      ...tools.map((t) => `  - {name: ${t.name}, version: ${t.version ?? '1.0.0'}, runtime: tool}`),
      ...hooks.map((h) => `  - {name: ${h.name}, version: 1.0.0, runtime: hook, config: ${JSON.stringify({ script: h.script })}}`),
      ...(o.shell ? ['capabilities:', '  shell:', `    allow: [${o.shell.join(', ')}]`] : []),
      'inference:',
      `  driver: {artifact: driver-replay, config: ${config}}`,
      '  model: replay-model',
      ...(o.inferenceExtra ? [o.inferenceExtra] : []),
      o.yamlExtra ?? '',
    ].join('\n'),
  );
  for (const [f, text] of Object.entries(o.files ?? {})) writeFileSync(join(capsuleDir, f), text);
  const hostEnv = { PATH: process.env.PATH, MURMUR_INFERENCE_ENDPOINT: recorder.url };
  const staged = await stage({ capsuleDir, registryDir: registry, workRoot: tmp('work-'), hostEnv });
  const session = await openSession(staged, { hostEnv });
  return {
    session,
    recorder,
    async close() {
      await session.close('ok');
      await recorder.close();
    },
  };
}
