/**
 * The two runtimes of bench/reference.ts and bench/warmup.ts as their subjects: the same reference components packed into
 * the same `.mur.zip` files, published with each runtime's own `mur publish`, and the commands that
 * serve the agent capsule and run the script capsule with each.
 */
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { zipSync } from 'fflate';
import { tmp } from '../test/loop/kit.ts';
import type { ScriptTurn } from '../test/provider/scripted-provider.ts';
import { MUR, murCommand } from './serving.ts';
import { spawnServer, type Served } from './proc-tree.ts';
import type { ImageRoot } from './image-root.ts';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { traceTasks, type TaskEvents } from './trace-phases.ts';

/** The reference's prebuilt components, under its crates/murmur-cli/tests/fixtures folder. */
export const COMPONENTS = {
  driver: 'drivers/anthropic/driver/murmur-driver-anthropic.wasm',
  tool: 'run/components/echo-tool.wasm',
  script: 'run/components/capsule-allowlisted.wasm',
};

function zipOf(manifest: string, wasm: string): Uint8Array {
  // The reference's package layout: murmur.yaml and the component at the root.
  return zipSync({ 'murmur.yaml': Buffer.from(manifest), 'tool.wasm': readFileSync(wasm) });
}

const DRIVER = { name: 'murmur-driver-anthropic', version: '0.1.4' };
const TOOL = { name: 'echo-tool', version: '0.1.0' };

function packages(dir: string, fixtures: string): string[] {
  const driver = join(dir, `${DRIVER.name}-${DRIVER.version}.mur.zip`);
  writeFileSync(driver, zipOf(`name: ${DRIVER.name}\nversion: ${DRIVER.version}\nruntime: driver\n`, join(fixtures, COMPONENTS.driver)));
  const tool = join(dir, `${TOOL.name}-${TOOL.version}.mur.zip`);
  writeFileSync(
    tool,
    zipOf(
      `name: ${TOOL.name}\nversion: ${TOOL.version}\nruntime: wasm\ndescription: Echoes its input.\ninput_schema:\n  type: object\n  properties:\n    data:\n      type: string\n`,
      join(fixtures, COMPONENTS.tool),
    ),
  );
  return [driver, tool];
}

export const API_KEY = 'test-key-not-secret';

/** The agent capsule's manifest, the reference's format, the same text for both runtimes. */
export function agentYaml(endpoint: string, queueDepth: number): string {
  return [
    'name: ref-agent',
    'version: 0.1.0',
    'artifacts:',
    `  - name: ${TOOL.name}`,
    `    version: ${TOOL.version}`,
    '    runtime: tool',
    `  - name: ${DRIVER.name}`,
    `    version: ${DRIVER.version}`,
    '    runtime: driver',
    'capabilities:',
    '  network:',
    '    allow:',
    `      - ${endpoint}`,
    'inference:',
    '  transport: http',
    `  endpoint: ${endpoint}`,
    '  model: test-model',
    `  api_key: ${API_KEY}`,
    '  driver:',
    `    artifact: ${DRIVER.name}`,
    'lifecycle:',
    '  task_acceptance: queue',
    `  queue_depth: ${queueDepth}`,
    '',
  ].join('\n');
}

const SCRIPT_YAML = `name: capsule\nversion: 0.0.1\nartifacts:\n  - name: ${TOOL.name}\n    version: ${TOOL.version}\n`;

/** One task: a `tool_use` of echo-tool, then the answer. */
export const TASK_TURNS: ScriptTurn[] = [{ toolCalls: [{ name: TOOL.name, input: { data: 'tick' } }] }, { text: 'done' }];

/** One task of one instant provider turn: the answer, no tool call (issue 42's ≤ ×1.0 target). */
export const ONE_TURN: ScriptTurn[] = [{ text: 'done' }];

/**
 * The task of a bench's timed windows: `--one-turn` makes it ONE_TURN (one provider turn, the
 * shape issue 42's time-per-task target names), otherwise TASK_TURNS (a tool turn, then the
 * answer). The tasks before the windows (the first, the one after idle) stay TASK_TURNS either way,
 * so a start loads the tool as before and those rows compare across runs.
 */
export function windowTurns(argv: readonly string[] = process.argv): { turns: ScriptTurn[]; label: string } {
  return argv.includes('--one-turn')
    ? { turns: ONE_TURN, label: 'one provider turn a task (the answer)' }
    : { turns: TASK_TURNS, label: 'one tool turn a task (a tool_use of echo-tool, then the answer)' };
}

/** A task with one more tool turn (--extra-turn): two `tool_use`s of echo-tool one after the other, then the answer. */
export const TWO_TOOL_TURNS: ScriptTurn[] = [
  { toolCalls: [{ name: TOOL.name, input: { data: 'tick' } }] },
  { toolCalls: [{ name: TOOL.name, input: { data: 'tock' } }] },
  { text: 'done' },
];

export interface Subject {
  name: string;
  /** Starts a serving process for the capsule in `dir`; cold = with empty component caches. `workdir` holds its trace. */
  serve(dir: string, cold: boolean): Served & { workdir: string };
  /** `mur run` of the script capsule: wall ms and max RSS bytes. */
  script(): { wall: number; hwm: number };
}

/**
 * This runtime: `dist` = the checkout's compiled dist/ on this machine's node with the image's node
 * flags and malloc settings; `image` = the runtime image's own files (its Node, /app, ENV and
 * ENTRYPOINT) in a chroot (image-root.ts) — what a pod runs. `variant` (bench/reference.ts
 * --ours-flags): node flags after the image's, and the name the arm is reported under.
 */
export function ours(
  kind: 'dist' | 'image',
  fixtures: string,
  img?: ImageRoot,
  variant?: { name: string; nodeFlags: string[]; env?: Record<string, string> },
): Subject {
  const nodeFlags = variant?.nodeFlags ?? [];
  const registry = tmp('ref-ours-reg-');
  const cache = tmp(`ref-ours-${kind}-cache-`);
  for (const p of packages(tmp('ref-ours-pkg-'), fixtures)) {
    const r = spawnSync(process.execPath, [MUR, 'publish', p, '--registry', registry], { env: { PATH: process.env.PATH!, MUR_FROM: 'dist' } });
    if (r.status !== 0) throw new Error(`mur publish ${p}: ${r.stderr}`);
  }
  const scriptDir = tmp('ref-ours-script-');
  writeFileSync(join(scriptDir, 'murmur.yaml'), SCRIPT_YAML);
  copyFileSync(join(fixtures, COMPONENTS.script), join(scriptDir, 'capsule.wasm'));
  const home = tmp('ref-ours-home-');
  const command = (args: string[], cache: string) =>
    murCommand(
      args,
      { HOME: home, MURMUR_COMPONENT_CACHE: cache, ...variant?.env },
      kind === 'image' ? { from: 'dist', image: img!, nodeFlags } : { from: 'dist', asImage: true, nodeFlags },
    );
  return {
    name: `${kind === 'image' ? 'ours (image)' : 'ours'}${variant ? ` ${variant.name}` : ''}`,
    serve(dir, cold) {
      const workdir = tmp('ref-ours-work-');
      const c = command(
        ['serve', dir, '--a2a-port', '0', '--metrics-port', '0', '--registry', registry, '--workdir', workdir, '--quiet'],
        cold ? tmp('ref-ours-cold-') : cache,
      );
      return { ...spawnServer(c.cmd, c.args, c.env, (out) => /serving \S+ \S+ at (http:\/\/\S+)/.exec(out)?.[1]), workdir };
    },
    script() {
      const c = command(['run', scriptDir, '--registry', registry, '--work-root', tmp('ref-ours-swork-'), '--quiet', '--task', 'run'], cache);
      const t = performance.now();
      const r = spawnSync('/usr/bin/time', ['-f', 'maxrss=%M', c.cmd, ...c.args], { env: c.env });
      const wall = performance.now() - t;
      if (r.status !== 0) throw new Error(`${kind}: mur run (script) exited ${r.status}: ${r.stdout}${r.stderr}`);
      return { wall, hwm: Number(/maxrss=(\d+)/.exec(r.stderr.toString())?.[1] ?? 0) * 1024 };
    },
  };
}

export function reference(bin: string, fixtures: string): Subject {
  const home = tmp('ref-ref-home-');
  const env = { PATH: process.env.PATH!, HOME: home };
  for (const p of packages(tmp('ref-ref-pkg-'), fixtures)) {
    const r = spawnSync(bin, ['publish', p], { env });
    if (r.status !== 0) throw new Error(`reference mur publish ${p}: ${r.stdout}${r.stderr}`);
  }
  const scriptDir = tmp('ref-ref-script-');
  writeFileSync(join(scriptDir, 'murmur.yaml'), SCRIPT_YAML);
  copyFileSync(join(fixtures, COMPONENTS.script), join(scriptDir, 'capsule.wasm'));
  return {
    name: 'reference',
    // The reference keeps no compiled-component cache: every start compiles, cold or not.
    serve(dir) {
      const workdir = tmp('ref-ref-work-');
      const served = spawnServer(
        bin,
        ['run', '--manifest', join(dir, 'murmur.yaml'), '--json', '--lifecycle-after-task', 'sleep', '--workdir', workdir],
        env,
        (out) => {
          const m = /"url":"(?:localhost|127\.0\.0\.1):(\d+)"/.exec(out);
          return m ? `http://127.0.0.1:${m[1]}/` : undefined;
        },
      );
      return { ...served, workdir };
    },
    script() {
      const t = performance.now();
      const r = spawnSync('/usr/bin/time', ['-f', 'maxrss=%M', bin, 'run', '--manifest', join(scriptDir, 'murmur.yaml')], { env });
      const wall = performance.now() - t;
      if (r.status !== 0 || !/status:\s+ok/.test(r.stdout.toString()))
        throw new Error(`reference: mur run (script) exited ${r.status}: ${r.stdout}${r.stderr}`);
      return { wall, hwm: Number(/maxrss=(\d+)/.exec(r.stderr.toString())?.[1] ?? 0) * 1024 };
    },
  };
}

/** One more arm of ours: node flags after the image's, and environment variables. */
export interface FlagArm {
  name: string;
  nodeFlags: string[];
  env: Record<string, string>;
}

/**
 * The arms of a repeatable `--<option> 'name=<node flag> …'`: one more arm of each of our kinds, run
 * with these node flags after the image's (`single=--single-threaded-gc`), so a V8 option is
 * compared with today's image and the reference in the same alternating rounds. A word of the form
 * `NAME=value` (upper-case name) is an environment variable of that arm instead
 * (`keep=MURMUR_COMPONENT_IDLE_MS=600000`). A value of another form stops the bench (exit 2).
 */
export function flagArms(option: string, argv: readonly string[] = process.argv): FlagArm[] {
  return argv.flatMap((a, i) => {
    if (a !== `--${option}`) return [];
    const m = /^([\w.-]+)=(.*)$/.exec(argv[i + 1] ?? '');
    if (!m) {
      console.error(`--${option}: expected 'name=<node flags>', got '${argv[i + 1] ?? ''}'`);
      process.exit(2);
    }
    const words = m[2]!.split(/\s+/).filter(Boolean);
    const isEnv = (w: string) => /^[A-Z][A-Z0-9_]*=/.test(w);
    const env = Object.fromEntries(words.filter(isEnv).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
    return [{ name: m[1]!, nodeFlags: words.filter((w) => !isEnv(w)), env }];
  });
}

/**
 * Where the reference is (nothing of it is in this repository): its CLI and its fixture folder from
 * MURMUR_REFERENCE_BIN and MURMUR_REFERENCE_FIXTURES, and dist/ built. Anything missing stops the
 * bench (exit 1) saying what to set; `oursOnly` needs the fixtures alone.
 */
export function referenceInputs(bench: string, oursOnly = false): { bin: string; fixtures: string } {
  const bin = process.env.MURMUR_REFERENCE_BIN;
  const fixtures = process.env.MURMUR_REFERENCE_FIXTURES;
  const missing: string[] = [];
  if (!fixtures || !Object.values(COMPONENTS).every((c) => existsSync(join(fixtures, c)))) {
    missing.push(
      `  MURMUR_REFERENCE_FIXTURES=<murmur checkout>/crates/murmur-cli/tests/fixtures   (must hold ${Object.values(COMPONENTS).join(', ')}; now ${fixtures ? `'${fixtures}'` : 'unset'})`,
    );
  }
  if (!oursOnly && (!bin || !existsSync(bin))) {
    missing.push(
      `  MURMUR_REFERENCE_BIN=<murmur checkout>/target/release/mur   (cargo build --release -p murmur-cli in github.com/murmur-nexus/murmur; now ${bin ? `'${bin}' (no such file)` : 'unset'}; or pass --ours-only)`,
    );
  }
  if (!existsSync(join(PROJECT_ROOT, 'dist/.built'))) missing.push('  dist/: run `npm run build` first (the `ours` arm runs compiled dist/)');
  if (missing.length) {
    console.error(`${bench}: cannot run; set:\n${missing.join('\n')}`);
    process.exit(1);
  }
  return { bin: bin ?? '', fixtures: fixtures! };
}

/**
 * `task_end` timestamps (ms) of every trace.jsonl under `dir` (a serving process's --workdir: both
 * runtimes write the same event), in order: the spacing of task ends, which no client affects, is
 * the check on a client's time per task (issue 42). Each task's last stamp (trace-phases.ts).
 */
export function taskEnds(dir: string): number[] {
  return endsOf(traceTasks(dir));
}

/** Each task's `task_end` timestamp, in the tasks' order. */
export function endsOf(tasks: readonly TaskEvents[]): number[] {
  return tasks.map((t) => t.stamps.at(-1)!);
}

/** Mean spacing of the last `n` task_end events of the trace under `dir`, the last `skip` left out; NaN (and a warning) when it has fewer. */
export function traceSpacing(name: string, dir: string, n: number, skip = 0): number {
  const all = taskEnds(dir);
  const ends = all.slice(0, all.length - skip).slice(-n);
  if (ends.length < n) {
    console.warn(`${name}: ${ends.length} task_end events under ${dir}, expected at least ${n}: no trace spacing this round`);
    return NaN;
  }
  return (ends[n - 1]! - ends[0]!) / (n - 1);
}
