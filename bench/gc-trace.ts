/**
 * V8's garbage collections in a child process, per isolate (the main thread's and each worker
 * thread's), read from its `--trace-gc-nvp` lines on stdout: how often each thread scavenges, how
 * long the pauses are, and how much it allocated (the sum of each collection's `allocated=`: what
 * the heap grew by since the collection before, so over a batch of tasks, what the batch allocated
 * give or take one young generation).
 *
 * Which isolate is the main thread's: the first to print, since the main thread collects while the
 * runtime's modules load, before any worker thread exists. The others are worker threads; in
 * `mur serve` with one capsule, the component thread does almost all of their allocation.
 */
import type { Readable } from 'node:stream';

export interface IsolateGc {
  scavenges: number;
  /** Collections of the whole heap (mark-compact, incremental or not). */
  full: number;
  pauseMs: number;
  allocatedBytes: number;
}

export interface GcWindow {
  main: IsolateGc;
  /** Every other isolate of the process, summed. */
  workers: IsolateGc;
}

const LINE = /^\[\d+:(0x[0-9a-f]+)\]\s+[\d.]+ ms: pause=([\d.]+) .*?\bgc=(\w+) .*?\ballocated=(\d+)/;

const zero = (): IsolateGc => ({ scavenges: 0, full: 0, pauseMs: 0, allocatedBytes: 0 });

/** Follows a process's stdout; `start()` and `stop()` bracket the window counted. */
export class GcTrace {
  private mainIsolate: string | undefined;
  private counting = false;
  private window: GcWindow = { main: zero(), workers: zero() };
  private partial = '';

  constructor(stdout: Readable) {
    stdout.on('data', (d: Buffer) => {
      const lines = (this.partial + d.toString()).split('\n');
      this.partial = lines.pop()!;
      for (const l of lines) this.line(l);
    });
  }

  private line(l: string): void {
    const m = LINE.exec(l);
    if (!m) return;
    const [, isolate, pause, kind, allocated] = m;
    this.mainIsolate ??= isolate;
    if (!this.counting) return;
    const into = isolate === this.mainIsolate ? this.window.main : this.window.workers;
    if (kind === 's') into.scavenges++;
    else into.full++;
    into.pauseMs += Number(pause);
    into.allocatedBytes += Number(allocated);
  }

  start(): void {
    this.window = { main: zero(), workers: zero() };
    this.counting = true;
  }

  stop(): GcWindow {
    this.counting = false;
    return this.window;
  }
}
