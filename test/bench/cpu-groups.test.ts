/**
 * bench/cpu-groups.ts and cpu-load.ts's layouts: `--load-as pods` really puts the burners in one
 * cpu cgroup and the serving process tree in another, as kubelet does with two pods, and leaves no
 * group behind; `processes` keeps them all in the bench's own. Read from /proc/<pid>/cgroup on this
 * machine's real hierarchy (the bench machines run as root with the cpu controller mounted).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuGroup, cpuGroupOf, cpuHierarchy } from '../../bench/cpu-groups.ts';
import { benchLoad, withBenchLoad } from '../../bench/cpu-load.ts';
import { tmp } from '../loop/kit.ts';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) p.kill('SIGKILL');
});

/** A process with a child of its own, both sleeping; resolves with both PIDs once the child runs. */
async function servingTree(): Promise<{ parent: number; child: number }> {
  const p = spawn(
    process.execPath,
    [
      '-e',
      "const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)'], { stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1e6)",
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  started.push(p);
  const child = await new Promise<number>((resolve) => p.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim()))));
  started.push({ kill: () => process.kill(child, 'SIGKILL') } as unknown as ChildProcess);
  return { parent: p.pid!, child };
}

describe('cpuHierarchy', () => {
  it('finds a v1 cpu controller or a v2 hierarchy with cpu, and names both places and the way out when neither is there', () => {
    const v1 = tmp('cgroup-v1-');
    mkdirSync(join(v1, 'cpu'));
    writeFileSync(join(v1, 'cpu', 'cgroup.procs'), '');
    writeFileSync(join(v1, 'cpu', 'cpu.shares'), '1024\n');
    expect(cpuHierarchy(v1)).toEqual({ version: 1, root: join(v1, 'cpu') });

    const v2 = tmp('cgroup-v2-');
    writeFileSync(join(v2, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    expect(cpuHierarchy(v2)).toEqual({ version: 2, root: v2 });

    const none = tmp('cgroup-none-');
    writeFileSync(join(none, 'cgroup.controllers'), 'cpuset io memory\n');
    expect(() => cpuHierarchy(none)).toThrow(/cpu\.shares \(cgroup v1\) nor 'cpu' in .*cgroup\.controllers \(cgroup v2\).*--load-as processes/);
  });

  it('says which folder it could not make a group in', () => {
    expect(() => cpuGroup({ version: 1, root: '/proc/self' }, 'x')).toThrow(/cannot make the cgroup \/proc\/self\/x .*needs root/);
  });
});

describe('benchLoad', () => {
  it('pods: the burners in one group, the whole serving tree in another, both gone after close', async () => {
    const { parent, child } = await servingTree();
    const before = cpuGroupOf(parent);
    const name = `mur-bench-test-${process.pid}`;
    const load = benchLoad(2, 'pods', name);
    const h = cpuHierarchy();
    try {
      const burners = await load.start(parent);
      try {
        expect(cpuGroupOf(parent)).toBe(`/${name}-serving`);
        expect(cpuGroupOf(child)).toBe(`/${name}-serving`);
        for (const b of burners.pids) expect(cpuGroupOf(b)).toBe(`/${name}-load`);
        expect(cpuGroupOf(process.pid)).toBe(before);
      } finally {
        await burners.stop();
      }
    } finally {
      load.close();
    }
    // The serving tree still runs: it went back to the root group with the groups removed.
    expect(cpuGroupOf(parent)).toBe('/');
    expect(existsSync(join(h.root, `${name}-serving`))).toBe(false);
    expect(existsSync(join(h.root, `${name}-load`))).toBe(false);
  });

  it('processes: the burners stay in the bench’s own group, and nothing is made', async () => {
    const { parent } = await servingTree();
    const load = benchLoad(1, 'processes', `mur-bench-test-${process.pid}-p`);
    const burners = await load.start(parent);
    try {
      expect(cpuGroupOf(burners.pids[0]!)).toBe(cpuGroupOf(process.pid));
      expect(existsSync(join(cpuHierarchy().root, `mur-bench-test-${process.pid}-p-load`))).toBe(false);
    } finally {
      await burners.stop();
      load.close();
    }
  });

  it('withBenchLoad: the rounds see the groups, which are gone after the rounds fail as after they end', async () => {
    const name = `mur-bench-${process.pid}`;
    const root = cpuHierarchy().root;
    const seen: boolean[] = [];
    await expect(
      withBenchLoad(1, 'pods', async () => {
        seen.push(existsSync(join(root, `${name}-serving`)), existsSync(join(root, `${name}-load`)));
        throw new Error('a round failed');
      }),
    ).rejects.toThrow('a round failed');
    expect(seen).toEqual([true, true]);
    expect(existsSync(join(root, `${name}-serving`))).toBe(false);
    expect(existsSync(join(root, `${name}-load`))).toBe(false);
  });
});
