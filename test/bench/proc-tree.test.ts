/**
 * The bench's readings of a process tree (bench/proc-tree.ts): anonymous memory is the tree's own —
 * what it allocated — and excludes the files it maps, which private memory counts whenever no
 * other process maps them; CPU by thread puts a thread's time under its own name, not the main
 * thread's.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { CLK, threadCpuPer, treeMemory, treeSwitches, treeThreads } from '../../bench/proc-tree.ts';

const MiB = 1048576;

describe('treeMemory', () => {
  it("counts a child's allocations as anonymous memory, and its mapped binary only in RSS", async () => {
    // 48 MiB written (so resident), then the child waits for stdin to close.
    const child = spawn(
      process.execPath,
      ['-e', "const b = Buffer.alloc(48 * 1048576, 1); console.log('ready'); process.stdin.on('end', () => b.length).resume();"],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    try {
      await once(child.stdout!, 'data');
      const m = treeMemory(child.pid!);
      expect(m.anon).toBeGreaterThan(48 * MiB);
      // The node binary's pages it maps are in its RSS but not in its anonymous memory.
      expect(m.rss - m.anon).toBeGreaterThan(8 * MiB);
      expect(m.priv).toBeGreaterThanOrEqual(m.anon - 4 * MiB);
    } finally {
      child.stdin!.end();
      await once(child, 'exit');
    }
  });
});

describe('treeThreads', () => {
  it("puts a worker thread's CPU under its own name and the idle main thread's under main", async () => {
    // The worker spins until its own thread has spent 400 ms of CPU (its /proc/thread-self/stat, not
    // the wall clock: on a busy machine 400 ms of wall time gave it 300 ms of CPU), says so, and
    // stays alive (a thread that ended is not read).
    const worker = `const { readFileSync } = require('node:fs');
      const ms = () => { const s = readFileSync('/proc/thread-self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return ((Number(f[11]) + Number(f[12])) * 1000) / ${CLK}; };
      const t = ms(); while (ms() - t < 400) for (let i = 0; i < 1e5; i++);
      require('node:worker_threads').parentPort.postMessage('spun'); setInterval(() => {}, 1000);`;
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const { Worker } = require('node:worker_threads'); const w = new Worker(${JSON.stringify(worker)}, { eval: true }); w.on('message', () => console.log('spun')); process.stdin.on('end', () => process.exit(0)).resume();`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      const before = new Map<string, number>();
      await once(child.stdout!, 'data');
      const per = threadCpuPer(before, treeThreads(child.pid!), 1);
      const others = [...per].filter(([name]) => name !== 'main').reduce((sum, [, ms]) => sum + ms, 0);
      expect(others).toBeGreaterThan(300);
      expect(per.get('main') ?? 0).toBeLessThan(others);
    } finally {
      child.stdin!.end();
      await once(child, 'exit');
    }
  });
});

describe('treeSwitches', () => {
  it('counts each time a thread of the tree went to sleep and was woken, in a child too', async () => {
    // A child that answers every line on stdin: each answer is one wait for the next line.
    const child = spawn(process.execPath, ['-e', "process.stdin.on('data', (d) => process.stdout.write(d));"], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const ping = async (): Promise<void> => {
        child.stdin!.write('x');
        await once(child.stdout!, 'data');
      };
      await ping();
      const before = treeSwitches(child.pid!);
      for (let i = 0; i < 50; i++) await ping();
      const after = treeSwitches(child.pid!);
      // Most answers find the child asleep; one whose next line arrives before it sleeps costs none.
      expect(after.voluntary - before.voluntary).toBeGreaterThanOrEqual(25);
      expect(after.involuntary).toBeGreaterThanOrEqual(before.involuntary);
    } finally {
      child.stdin!.end();
      await once(child, 'exit');
    }
  });
});
