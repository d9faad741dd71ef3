/**
 * bench/gc-trace.ts reads a child's `--trace-gc-nvp` lines per isolate. Tested on a real Node
 * process that allocates on its main thread and in a worker thread, with V8 tracing both.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { GcTrace } from '../../bench/gc-trace.ts';

// The main thread allocates first (so it prints first), then a worker allocates and the main
// thread waits for it without allocating; each says when it is done.
const CHILD = `
const { Worker } = require('node:worker_threads');
const churn = (n) => { let a = []; for (let i = 0; i < n; i++) { a.push({ i }); if (a.length > 1000) a = []; } };
churn(3e5);
process.stdout.write('main done\\n');
const w = new Worker(\`(\${churn})(6e5); require('node:worker_threads').parentPort.postMessage('done');\`, { eval: true });
w.once('message', () => { process.stdout.write('worker done\\n'); w.terminate(); });
`;

describe('the GC trace of a serving process', () => {
  it("counts the main thread's collections apart from the worker threads', only inside the window", async () => {
    const child = spawn(process.execPath, ['--trace-gc-nvp', '--max-semi-space-size=1', '-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
    const trace = new GcTrace(child.stdout);
    let out = '';
    const seen = (line: string) =>
      new Promise<void>((resolve) => {
        const on = (d: Buffer) => {
          out += d.toString();
          if (out.includes(line)) {
            child.stdout.off('data', on);
            resolve();
          }
        };
        child.stdout.on('data', on);
      });
    await seen('main done');
    trace.start();
    await seen('worker done');
    const w = trace.stop();
    await new Promise((r) => child.once('exit', r));
    expect(w.workers.scavenges).toBeGreaterThan(0);
    expect(w.workers.allocatedBytes).toBeGreaterThan(0);
    // The main thread did not allocate in the window beyond starting the worker: the worker's
    // collections are not counted as the main thread's.
    expect(w.main.scavenges).toBeLessThan(w.workers.scavenges);
  });
});
