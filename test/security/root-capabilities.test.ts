/**
 * A runtime run as root: its shell tools run as root too, and root holds CAP_SYS_PTRACE, which
 * reads even a non-dumpable process's memory (/proc/<pid>/mem), where the provider key lives
 * (issue 38 §2). `mur` takes CAP_SYS_PTRACE, CAP_SYS_RAWIO and CAP_SYS_MODULE out of its bounding
 * set and every other set, on every thread (runtime/native/caps.c), so no process it starts can
 * hold them. Tests run as root (CI does): real `mur serve` and `mur run`, a real shell tool.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { addonPath } from '../../runtime/native-addon.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { serve } from '../cli/serve-kit.ts';

const READER = fileURLToPath(new URL('./fixtures/read-runtime-memory.mjs', import.meta.url));
const CAP_SYS_MODULE = 16;
const CAP_SYS_RAWIO = 17;
const CAP_SYS_PTRACE = 19;
const DROPPED = [CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_PTRACE];

const holds = (mask: string, cap: number): boolean => ((BigInt(`0x${mask}`) >> BigInt(cap)) & 1n) === 1n;
const heldOf = (mask: string): number[] => DROPPED.filter((c) => holds(mask, c));

interface Report {
  maps: string;
  mem: string;
  found: boolean;
  self: Record<string, string>;
  runtime: Record<string, string>;
}

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error('these tests run as root (CI does): they check what a root shell tool can read of a root runtime');
});

describe('a runtime run as root', () => {
  it('mur serve: its shell tool cannot open /proc/<runtime pid>/mem, finds no key in its memory, and neither holds CAP_SYS_PTRACE', async () => {
    const key = `sk-ant-api03-${crypto.randomUUID()}`;
    const command = `${process.execPath} ${READER} $PPID ${Buffer.from(key).toString('base64')}`;
    const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: 'sh', input: { command } }] }, { text: 'read it' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic')]);
    const capsule = tmp('rootcaps-capsule-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'reader', tools: [], shell: ['sh'] }));
    const served = await serve(capsule, {
      registry,
      workRoot: tmp('rootcaps-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: key },
    });
    cleanup.push(() => served.stop());

    const done = await sendMessage({ peerUrl: served.url, text: 'read the runtime', allow: [served.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    const result = JSON.stringify(provider.requests[1]!.body);
    const m = /RESULT ([A-Za-z0-9+/=]+)/.exec(result);
    expect(m, result).not.toBeNull();
    const r = JSON.parse(Buffer.from(m![1]!, 'base64').toString()) as Report;
    // Refused outright (not merely empty): the kernel's ptrace check (attach mode) fails without
    // CAP_SYS_PTRACE. maps is not asserted: Linux 6.18 shows a non-dumpable root process's maps
    // (the layout, not the contents) to root without it; the reader scans only when both open.
    expect(['EACCES', 'EPERM'], `maps: ${r.maps}`).toContain(r.mem);
    expect(r.found).toBe(false);
    expect(r.self.CapEff, 'the tool still runs with root’s other capabilities').not.toBe('0000000000000000');
    for (const set of ['CapBnd', 'CapPrm', 'CapEff', 'CapInh', 'CapAmb']) {
      expect(heldOf(r.runtime[set]!), `the runtime's ${set} ${r.runtime[set]}`).toEqual([]);
      expect(heldOf(r.self[set]!), `the shell tool's ${set} ${r.self[set]}`).toEqual([]);
    }
    expect(served.output()).not.toContain('E-RUN-051');
  });

  it('mur run without CAP_SETPCAP (a container that lacks it): warns E-RUN-051 saying why, and still answers', async () => {
    const key = `sk-ant-api03-${crypto.randomUUID()}`;
    const provider = await startScriptedProvider({ turns: [{ text: 'answered' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic')]);
    const capsule = tmp('rootcaps-run-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'no-setpcap', tools: [] }));
    // setpriv takes CAP_SETPCAP out of the bounding and inheritable sets: root's exec of node then lacks it.
    const proc = spawn(
      'setpriv',
      [
        '--bounding-set',
        '-setpcap',
        '--inh-caps',
        '-setpcap',
        process.execPath,
        join(PROJECT_ROOT, 'bin/mur'),
        'run',
        capsule,
        '--task',
        'answer me',
        '--registry',
        registry,
        '--work-root',
        tmp('rootcaps-run-work-'),
      ],
      {
        env: { PATH: process.env.PATH, MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: key },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((r) => proc.once('close', r));
    expect(code, output).toBe(0);
    expect(output).toContain('answered');
    expect(output).toMatch(
      /warning: running as root, and the processes it starts keep CAP_SYS_PTRACE \(PR_CAPBSET_DROP: Operation not permitted\).*\[E-RUN-051\]/,
    );
    expect(output).not.toContain(key);
  });

  it('the addon drops them on every thread: a worker started before the drop starts children without them', () => {
    const script = [
      "const { Worker } = require('node:worker_threads');",
      // The worker is up (and has its own capability sets) before the drop; it spawns only after.
      "const w = new Worker(`const { parentPort } = require('node:worker_threads'); parentPort.postMessage('up'); parentPort.once('message', () => parentPort.postMessage(require('node:child_process').execFileSync('grep', ['^Cap', '/proc/self/status'], { encoding: 'utf8' })));`, { eval: true });",
      "w.once('message', () => {",
      `  const dropped = require(${JSON.stringify(addonPath())}).dropCapabilities();`,
      "  w.once('message', (child) => { console.log(JSON.stringify({ dropped, child })); w.terminate(); });",
      "  w.postMessage('spawn');",
      '});',
    ].join('\n');
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout) as { dropped: string; child: string };
    expect(o.dropped).toBe('');
    const sets = Object.fromEntries([...o.child.matchAll(/^(Cap\w+):\s*([0-9a-f]+)$/gm)].map((x) => [x[1]!, x[2]!]));
    for (const set of ['CapBnd', 'CapPrm', 'CapEff']) expect(heldOf(sets[set]!), `the worker's child's ${set} ${sets[set]}`).toEqual([]);
  });
});
