/** A capsule with the Anthropic driver, the echo tool and hook-script hooks, for end-to-end hook tests. */
import type { Script } from '../provider/scripted-provider.ts';
import { ECHO_TOOL, driverDef, openKit, type ArtifactDef, type Kit } from '../loop/kit.ts';

export interface HookDef {
  name: string;
  /** Hook contract lines for the artifact's own murmur.yaml. */
  contract?: string;
  /** The hook-script fixture's behaviour per handler (its `config: {script}`). */
  script: Record<string, unknown>;
  /** The capsule's grant for the hook. */
  caps?: Record<string, unknown>;
}

export function hookArtifact(h: HookDef): ArtifactDef {
  return { component: 'hook-script', name: h.name, runtime: 'hook', extra: h.contract ?? '' };
}

/** murmur.yaml; `extra` is appended under `inference:` (or starts a new top-level key). */
export function hookCapsuleYaml(hooks: HookDef[], extra = '', name = 'hook-capsule'): string {
  return [
    `name: ${name}`,
    'version: 1.0.0',
    'artifacts:',
    '  - {name: driver-anthropic, version: 0.1.0, runtime: driver}',
    '  - {name: echo, version: 1.0.0, runtime: tool}',
    ...hooks.map(
      (h) =>
        `  - {name: ${h.name}, version: 1.0.0, runtime: hook, config: ${JSON.stringify({ script: h.script })}${h.caps ? `, capabilities: ${JSON.stringify(h.caps)}` : ''}}`,
    ),
    'inference:',
    '  driver: {artifact: driver-anthropic}',
    '  model: claude-test',
    extra,
  ].join('\n');
}

export function openHookCapsule(hooks: HookDef[], script: Script, extra = '', name?: string): Promise<Kit> {
  return openKit({ yaml: hookCapsuleYaml(hooks, extra, name), artifacts: [driverDef('anthropic'), ECHO_TOOL, ...hooks.map(hookArtifact)], script });
}
