/**
 * `mur run` as a one-shot process (runtime/cli/one-shot.ts): the Node binary's pages leave the
 * resident set as it starts, once a script capsule's code has loaded and before its task, and
 * TurboFan is off from the start until the task (or until staging finds an agent capsule). Each
 * run is `mur`'s own main() in a process of its own (the flags and the pages are the process's),
 * on real components: the script fixtures of test/script/, the C driver and a scripted provider.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { addonPath } from '../../runtime/native-addon.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { makeCapsule } from '../registry/helpers.ts';
import { demoYaml, program, scriptRegistry, tmp } from '../script/helpers.ts';

interface Step {
  phase: string;
  released?: number;
  flag?: string;
}

/**
 * Runs `mur <args>` through main() in a child process (node started with `nodeFlags`); its exit
 * code, output lines and one-shot steps. Asynchronous: the scripted provider answers from this
 * process meanwhile.
 */
async function murInChild(
  args: string[],
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
): Promise<{ code: number; out: string[]; err: string[]; steps: Step[] }> {
  const source = `
    import { main } from ${JSON.stringify(join(PROJECT_ROOT, 'runtime/cli/main.ts'))};
    import { oneShotSteps } from ${JSON.stringify(join(PROJECT_ROOT, 'runtime/cli/one-shot.ts'))};
    const out = [], err = [];
    const code = await main(JSON.parse(process.argv.at(-1)), (s) => out.push(s), (s) => err.push(s));
    process.stdout.write('\\n' + JSON.stringify({ code, out, err, steps: oneShotSteps() }) + '\\n');
    process.exit(0);
  `;
  // A file, not --eval: component worker threads start with the process's node flags, and
  // --input-type is refused without --eval.
  const file = join(tmp('one-shot-child-'), 'mur-main.mjs');
  writeFileSync(file, source);
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', file, JSON.stringify(args)], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH!, HOME: tmp('one-shot-home-'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [status] = (await once(child, 'close')) as [number | null];
  const last = stdout.trim().split('\n').at(-1) ?? '';
  if (status !== 0 || !last.startsWith('{')) throw new Error(`mur ${args[0]} in a child exited ${status}: ${stdout}${stderr}`);
  return JSON.parse(last) as { code: number; out: string[]; err: string[]; steps: Step[] };
}

/** The WAT capsule of test/script/inline-run.test.ts: it and its tools run on the main thread. */
const WAT_YAML =
  'name: wat-demo\nversion: 0.1.0\nartifacts:\n  - name: wat-demo\n    version: 1.0.0\n  - name: script-wat-tool\n    version: 1.0.0\n  - name: echo-tool\n    version: 1.0.0\n';

const released = expect.any(Number) as unknown as number;
/** What a script capsule's run does, whichever thread its components run on. */
const SCRIPT_STEPS = [
  { phase: 'start', released, flag: '--no-turbofan' },
  { phase: 'loaded', released },
  { phase: 'task', released, flag: '--turbofan' },
];

let registry = '';
beforeAll(async () => {
  if (!addonPath()) throw new Error('runtime/native/memory.node is not built: run node --import tsx scripts/build-native.ts');
  registry = await scriptRegistry();
});

describe('mur run as a one-shot process', () => {
  for (const [where, yaml, text] of [
    ['on the main thread', WAT_YAML, 'ignored'],
    ['in component workers', demoYaml(), program({ op: 'invoke', name: 'echo-tool', data: 'hi' })],
  ] as const) {
    it(`a script capsule run ${where} lets the binary's pages go as it starts, once its code has loaded and before the task, with TurboFan off until the task`, async () => {
      const r = await murInChild(['run', makeCapsule(yaml), '--task', text, '--registry', registry, '--work-root', tmp('one-shot-work-'), '--quiet']);
      expect(r.err).toEqual([]);
      expect(r.code).toBe(0);
      expect(r.steps).toEqual(SCRIPT_STEPS);
      // Each release found pages of the binary resident: the start's, the loading's, the staging's.
      for (const s of r.steps) expect(s.released).toBeGreaterThan(0);
    });
  }

  it('an agent capsule gets TurboFan back as soon as staging says what it is, and releases nothing more', async () => {
    const provider = await startScriptedProvider({ turns: [{ text: 'all done' }] });
    try {
      const agentRegistry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
      const r = await murInChild(
        ['run', makeCapsule(capsuleYaml()), '--task', 'hi', '--registry', agentRegistry, '--work-root', tmp('one-shot-work-'), '--quiet'],
        {
          MURMUR_INFERENCE_ENDPOINT: provider.url,
          MURMUR_INFERENCE_API_KEY: API_KEY,
        },
      );
      expect(r.code).toBe(0);
      expect(r.out.at(-1)).toBe('all done');
      expect(r.steps).toEqual([
        { phase: 'start', released, flag: '--no-turbofan' },
        { phase: 'loaded', flag: '--turbofan' },
      ]);
    } finally {
      await provider.stop();
    }
  });

  it('a run that fails before its task (a usage error) ends with TurboFan back on', async () => {
    const r = await murInChild(['run', tmp('one-shot-empty-'), '--tsak', 'x']);
    expect(r.code).toBe(2);
    expect(r.steps).toEqual([
      { phase: 'start', released, flag: '--no-turbofan' },
      { phase: 'end', flag: '--turbofan' },
    ]);
  });

  it("leaves the user's own --no-turbofan alone", async () => {
    const r = await murInChild(['run', makeCapsule(WAT_YAML), '--task', 'x', '--registry', registry, '--work-root', tmp('one-shot-work-'), '--quiet'], {}, [
      '--no-turbofan',
    ]);
    expect(r.code).toBe(0);
    expect(r.steps).toEqual([
      { phase: 'start', released },
      { phase: 'loaded', released },
      { phase: 'task', released },
    ]);
  });
});

describe('TurboFan set off and on at run time (v8.setFlagsFromString), as one-shot.ts does', () => {
  it('keeps a function out of TurboFan while off and compiles it with TurboFan once back on', () => {
    // V8's own optimization status (runtime-test.cc: kTurboFanned = 1 << 6); synchronous
    // recompilation so the status is read after the compile, not while it runs on a thread.
    const source = `
      import { startOneShot, beforeTask } from ${JSON.stringify(join(PROJECT_ROOT, 'runtime/cli/one-shot.ts'))};
      const turbofanned = (f) => (%GetOptimizationStatus(f) & (1 << 6)) !== 0;
      const optimized = (f) => { %PrepareFunctionForOptimization(f); f(10); f(10); %OptimizeFunctionOnNextCall(f); f(10); return turbofanned(f); };
      startOneShot();
      const whileOff = optimized((n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; });
      beforeTask();
      const backOn = optimized((n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 5; return s; });
      console.log(JSON.stringify({ whileOff, backOn }));
    `;
    const p = spawnSync(process.execPath, ['--allow-natives-syntax', '--no-concurrent-recompilation', '--import', 'tsx', '--input-type=module', '-e', source], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH! },
    });
    expect(p.stderr).toBe('');
    expect(JSON.parse(p.stdout)).toEqual({ whileOff: false, backOn: true });
  });
});
