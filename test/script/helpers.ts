/** Shared helpers for the script-capsule tests: a registry of real fixture components, staged capsules. */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { publish } from '../../runtime/registry/registry.ts';
import { stageCapsule, type StagedCapsule } from '../../runtime/session/stage.ts';
import { ScriptSession } from '../../runtime/script/script-session.ts';
import { afterEach, beforeAll } from 'vitest';
import { fixture } from '../fixtures/build.ts';
import { watFixture } from '../fixtures/build-wat.ts';
import { tmp } from '../registry/helpers.ts';

export { tmp };

export interface Published {
  name: string;
  version: string;
  /** Which fixture component it carries. */
  wasm: string;
  extra?: string;
}

/** Publishes `wasm` as artifact `name@version` (runtime tool) into `registry`. */
export function publishComponent(registry: string, a: Published): void {
  const dir = tmp('mur-script-src-');
  writeFileSync(path.join(dir, 'murmur.yaml'), `name: ${a.name}\nversion: ${a.version}\nruntime: tool\ndescription: The ${a.name} artifact.\n${a.extra ?? ''}`);
  copyFileSync(a.wasm, path.join(dir, 'component.wasm'));
  publish(registry, dir);
}

export interface Fixtures {
  capsule: string;
  echo: string;
  probe: string;
  watTool: string;
  watCapsule: string;
}

let built: Promise<Fixtures> | undefined;
export function fixtures(): Promise<Fixtures> {
  built ??= (async () => ({
    capsule: await fixture('script-capsule'),
    echo: await fixture('echo-tool'),
    probe: await fixture('sandbox-probe'),
    watTool: await watFixture('script-wat-tool'),
    watCapsule: await watFixture('script-wat-capsule'),
  }))();
  return built;
}

/**
 * A registry holding: `demo` (the step-driven capsule component), `echo-tool`, `probe-tool`
 * (sandbox-probe), `script-wat-tool`, `wat-demo` (the WAT capsule) and `late-echo` (echo-tool
 * bytes, for pull).
 */
export async function scriptRegistry(): Promise<string> {
  const f = await fixtures();
  const registry = tmp('mur-script-reg-');
  publishComponent(registry, { name: 'demo', version: '1.0.0', wasm: f.capsule });
  publishComponent(registry, { name: 'echo-tool', version: '1.0.0', wasm: f.echo, extra: 'input_schema:\n  type: object\n' });
  publishComponent(registry, { name: 'probe-tool', version: '1.0.0', wasm: f.probe });
  publishComponent(registry, { name: 'script-wat-tool', version: '1.0.0', wasm: f.watTool });
  publishComponent(registry, { name: 'wat-demo', version: '1.0.0', wasm: f.watCapsule });
  publishComponent(registry, { name: 'late-echo', version: '2.0.0', wasm: f.echo });
  return registry;
}

/** Writes a capsule folder with `yaml` as murmur.yaml and stages it against `registry`. */
export async function stageYaml(registry: string, yaml: string, files: Record<string, string | Buffer> = {}): Promise<StagedCapsule> {
  const dir = tmp('mur-script-caps-');
  writeFileSync(path.join(dir, 'murmur.yaml'), yaml);
  for (const [f, body] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), body);
  }
  return stageCapsule({ capsuleDir: dir, registryDir: registry, workRoot: tmp('mur-script-work-'), cacheDir: tmp('mur-script-cache-') });
}

/** The default demo capsule manifest, with extra YAML appended under `capabilities:` etc. */
export function demoYaml(o: { artifacts?: string; capabilities?: string; top?: string } = {}): string {
  return `${[
    'name: demo',
    'version: 0.1.0',
    'artifacts:',
    '  - name: demo',
    '    version: 1.0.0',
    '  - name: echo-tool',
    '    version: 1.0.0',
    o.artifacts ?? '',
    'capabilities:',
    o.capabilities ?? '  filesystem:\n    scope: .',
    o.top ?? '',
  ]
    .filter((l) => l !== '')
    .join('\n')}\n`;
}

export interface StepResult {
  op: string;
  ok: boolean;
  value?: any;
  error?: string;
}

/** Parses the step capsule's answer. */
export function results(text: string | undefined): StepResult[] {
  if (text === undefined) throw new Error('the capsule wrote no out/result.txt');
  return (JSON.parse(text) as { results: StepResult[] }).results;
}

export function program(...steps: Record<string, unknown>[]): string {
  return JSON.stringify({ steps });
}

/** trace.jsonl as objects. */
export function traceOf(staged: StagedCapsule): any[] {
  return readFileSync(staged.workdir.trace, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

let n = 0;
export function task(text: string, extra: Record<string, unknown> = {}) {
  n++;
  return { taskId: `task-${n}`, contextId: `ctx-${n}`, text, ...extra };
}

/**
 * The lifecycle every script test file shares: one registry for the file, and every session opened
 * through `open()` (or handed to `track()`) closed after each test.
 */
export function useScriptSessions(): {
  registry(): string;
  open(yaml: string, hostEnv?: NodeJS.ProcessEnv): Promise<ScriptSession>;
  track(s: ScriptSession): ScriptSession;
} {
  let registry = '';
  const opened: ScriptSession[] = [];
  beforeAll(async () => {
    registry = await scriptRegistry();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  const track = (s: ScriptSession): ScriptSession => {
    opened.push(s);
    return s;
  };
  return {
    registry: () => registry,
    track,
    open: async (yaml, hostEnv) => track(await ScriptSession.open(await stageYaml(registry, yaml), hostEnv ? { hostEnv } : {})),
  };
}
