/**
 * The bench's memory readings of a process tree (bench/proc-tree.ts): anonymous memory is the
 * tree's own — what it allocated — and excludes the files it maps, which private memory counts
 * whenever no other process maps them.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { treeMemory } from '../../bench/proc-tree.ts';

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
