/**
 * `mur serve`'s serving threads run with a short scheduler slice (runtime/thread-slice.ts,
 * MURMUR_THREAD_SLICE_US, default 100 µs) and nothing else it starts does. Read from outside, as
 * the kernel shows it: the scripted provider asks the shell tool to print `se.slice` of every
 * thread of its parent (the runtime: the shell tool's processes are its children) and of its own
 * process, in the middle of a task, while the driver's component thread is there.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { serve } from './serve-kit.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

/** The kernel's default slice for a thread that asked for none (a fresh process's). */
function defaultSlice(): number {
  const r = spawnSync('cat', ['/proc/self/sched'], { encoding: 'utf8' });
  const m = /se\.slice\s*:\s*(\d+)/.exec(r.stdout);
  if (!m)
    throw new Error(
      `/proc/self/sched shows no se.slice: this kernel (${spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim()}) has no EEVDF slices; custom slices need Linux 6.12 or later`,
    );
  return Number(m[1]);
}

/** The first string in `v` (a request body) holding `mark`. */
function findText(v: unknown, mark: string): string | undefined {
  if (typeof v === 'string') return v.includes(mark) ? v : undefined;
  if (v && typeof v === 'object')
    for (const x of Object.values(v)) {
      const t = findText(x, mark);
      if (t !== undefined) return t;
    }
  return undefined;
}

/** Runs one task whose tool call prints the slices; returns the runtime's pid, its threads' slices by tid, and the shell's. */
async function slicesDuringATask(env: Record<string, string>): Promise<{ pid: number; threads: Map<number, number>; shell: number }> {
  const command = 'for t in /proc/$PPID/task/*; do echo "thread $t"; grep se.slice $t/sched; done; echo "shell"; grep se.slice /proc/self/sched; true';
  const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: 'sh', input: { command } }] }, { text: 'read them' }] });
  cleanup.push(() => provider.stop());
  const registry = await makeRegistry([driverDef('anthropic')]);
  const capsule = tmp('slice-capsule-');
  writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'slices', tools: [], shell: ['sh'] }));
  const served = await serve(capsule, {
    registry,
    workRoot: tmp('slice-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: 'k', ...env },
  });
  cleanup.push(() => served.stop());
  const done = await sendMessage({ peerUrl: served.url, text: 'show the slices', allow: [served.url], wait: true });
  expect(done.ok && done.state, served.output()).toBe('completed');
  // The tool's output as the provider received it in the next request.
  const text = findText(provider.requests[1]!.body, 'thread /proc/') ?? '';
  const threads = new Map<number, number>();
  for (const m of text.matchAll(/thread \/proc\/(\d+)\/task\/(\d+)\s+se\.slice\s*:\s*(\d+)/g)) threads.set(Number(m[2]), Number(m[3]));
  const shell = Number(/shell\s+se\.slice\s*:\s*(\d+)/.exec(text)?.[1]);
  return { pid: served.proc.pid!, threads, shell };
}

describe('mur serve: the serving threads’ scheduler slice', () => {
  it('the main thread and the component thread take a 100 µs slice; V8’s helpers and the shell tool’s processes keep the kernel’s default', async () => {
    const base = defaultSlice();
    const { pid, threads, shell } = await slicesDuringATask({});
    expect(threads.size, 'the shell tool printed the runtime’s threads').toBeGreaterThan(2);
    if (threads.get(pid) !== 100_000 && [...threads.values()].every((v) => v === base)) {
      throw new Error(
        `no thread of mur serve has a custom slice: the kernel keeps its own (custom slices need Linux 6.12 or later) or the native addon is missing (${join(PROJECT_ROOT, 'runtime/native/memory.node')})`,
      );
    }
    expect(threads.get(pid)).toBe(100_000);
    // The main thread and at least the session's component thread (the driver runs in it).
    expect([...threads.values()].filter((v) => v === 100_000).length).toBeGreaterThanOrEqual(2);
    // V8's platform threads, started with the process, and libuv's keep the default.
    expect([...threads.values()].filter((v) => v === base).length).toBeGreaterThanOrEqual(1);
    expect(shell).toBe(base);
  });

  it('MURMUR_THREAD_SLICE_US=0 leaves every thread at the kernel’s default', async () => {
    const base = defaultSlice();
    const { pid, threads } = await slicesDuringATask({ MURMUR_THREAD_SLICE_US: '0' });
    expect(threads.get(pid)).toBe(base);
    expect([...threads.values()].every((v) => v === base)).toBe(true);
  });

  it('MURMUR_THREAD_SLICE_US=500 gives the serving threads 500 µs', async () => {
    const { pid, threads } = await slicesDuringATask({ MURMUR_THREAD_SLICE_US: '500' });
    expect(threads.get(pid)).toBe(500_000);
    expect([...threads.values()].filter((v) => v === 500_000).length).toBeGreaterThanOrEqual(2);
  });

  it('a slice below the kernel’s 100 µs is refused at start with E-RUN-087, before the capsule is staged', () => {
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'bin/mur'), 'serve', tmp('slice-never-staged-'), '--a2a-port', '0', '--metrics-port', '0'], {
      env: { PATH: process.env.PATH, MURMUR_THREAD_SLICE_US: '50' },
      encoding: 'utf8',
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('E-RUN-087');
    expect(r.stderr).toContain('MURMUR_THREAD_SLICE_US');
    expect(r.stderr).toContain('"50"');
    expect(r.stderr).not.toContain('murmur.yaml');
  });
});
