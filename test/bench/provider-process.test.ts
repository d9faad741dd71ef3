/**
 * The benches' scripted provider in a process of its own (bench/provider-process.ts), and the
 * process-tree memory readings of bench/proc-tree.ts: real processes, real HTTP.
 */
import { describe, expect, it } from 'vitest';
import { spawnProvider } from '../../bench/provider-process.ts';
import { samplePeak, treeMemory, treePids, treeStat } from '../../bench/proc-tree.ts';

describe('bench provider process', () => {
  it('serves the script from a process other than the bench, and ends on stop', async () => {
    const p = await spawnProvider({ turns: [{ text: 'hello from the script' }], apiKey: 'k' });
    try {
      expect(p.pid).not.toBe(process.pid);
      expect(treePids(process.pid)).toContain(p.pid);
      const r = await fetch(`${p.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(r.status).toBe(200);
      expect(JSON.stringify(await r.json())).toContain('hello from the script');
    } finally {
      await p.stop();
    }
    expect(treePids(process.pid)).not.toContain(p.pid);
  });
});

describe('bench process-tree memory', () => {
  it('reads RSS and private memory of a tree from smaps_rollup, private within RSS', () => {
    const m = treeMemory(process.pid);
    expect(m.rss).toBeGreaterThan(0);
    expect(m.priv).toBeGreaterThan(0);
    expect(m.priv).toBeLessThanOrEqual(m.rss);
  });

  it('keeps the highest RSS sampled, at least what the tree holds when stopped', () => {
    const peak = samplePeak(process.pid, 5);
    const held = Buffer.alloc(64 * 1048576, 1); // touched: resident until it is freed
    expect(peak.stop()).toBeGreaterThanOrEqual(64 * 1048576);
    expect(held[0]).toBe(1);
  });

  it('samples the anonymous RSS apart: file-backed pages (the node binary) left out, within RSS', () => {
    const peak = samplePeak(process.pid, 5, 'anon');
    const held = Buffer.alloc(64 * 1048576, 1);
    expect(peak.stop()).toBeGreaterThanOrEqual(64 * 1048576);
    const t = treeStat(process.pid);
    expect(t.anon).toBeGreaterThan(0);
    expect(t.anon).toBeLessThan(t.rss);
    expect(held[0]).toBe(1);
  });
});
