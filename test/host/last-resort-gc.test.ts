/**
 * V8's last-resort collection (runtime/last-resort-gc.ts) taken from a fresh context with the
 * process-wide `--expose-gc` flag switched on for a moment: several threads doing so at the same
 * moment (component threads settling together) must each get their collection.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GCProfiler } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { transformSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { lastResortGc, youngGc } from '../../runtime/last-resort-gc.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../loop/kit.ts';

const THREADS = 8;
const ROUNDS = 20;

/** The module as plain JavaScript: worker threads here run without the TypeScript loader. */
function moduleAsJs(): string {
  const file = join(tmp('lrgc-'), 'last-resort-gc.mjs');
  const ts = readFileSync(join(PROJECT_ROOT, 'runtime/last-resort-gc.ts'), 'utf8');
  writeFileSync(file, transformSync(ts, { loader: 'ts', format: 'esm' }).code);
  return file;
}

// Each thread waits at a barrier, then collects; it answers 'ok' or the error it got.
const THREAD = `
  const { workerData, parentPort } = require('node:worker_threads');
  const barrier = new Int32Array(workerData.sab);
  import(workerData.mod).then((m) => {
    Atomics.add(barrier, 1, 1);
    while (Atomics.load(barrier, 0) === 0) {}
    try { m.lastResortGc(); parentPort.postMessage('ok'); } catch (e) { parentPort.postMessage(String(e)); }
  });
`;

describe('the last-resort collection', () => {
  it('runs in every one of several threads that ask for it at the same moment', async () => {
    const mod = moduleAsJs();
    const answers: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const sab = new SharedArrayBuffer(8);
      const barrier = new Int32Array(sab);
      const threads = Array.from({ length: THREADS }, () => new Worker(THREAD, { eval: true, workerData: { sab, mod } }));
      const answered = threads.map((w) => new Promise<string>((resolve, reject) => w.once('message', resolve).once('error', reject)));
      // Released together once all are at the barrier (each spins there: no timer).
      while (Atomics.load(barrier, 1) < THREADS) await new Promise((r) => setImmediate(r));
      Atomics.store(barrier, 0, 1);
      answers.push(...(await Promise.all(answered)));
      await Promise.all(threads.map((w) => w.terminate()));
    }
    expect(answers.filter((a) => a !== 'ok')).toEqual([]);
    expect(answers).toHaveLength(THREADS * ROUNDS);
  });

  /** The kinds of collection `run` made this thread's isolate run (GCProfiler: synchronous). */
  const kinds = (run: () => void): string[] => {
    const p = new GCProfiler();
    p.start();
    run();
    return [...new Set(p.stop().statistics.map((s) => s.gcType))];
  };

  it("is a full, compacting collection on this Node, with or without the code kept (V8 before 12 ran a scavenge for gc's options)", () => {
    expect(kinds(() => lastResortGc())).toContain('MarkSweepCompact');
    expect(kinds(() => lastResortGc({ keepCode: true }))).toContain('MarkSweepCompact');
  });

  it("collects only the young generation where asked to (the main isolate's settle)", () => {
    expect(kinds(() => youngGc())).toEqual(['Scavenge']);
  });
});
