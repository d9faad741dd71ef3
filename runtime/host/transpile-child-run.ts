/**
 * Runs a component's transpile in a child process (transpile-child.ts) instead of the runtime's
 * own thread. jco's transpiler is itself a large WebAssembly module that runs once per component:
 * under V8's default tiering, compiling its hot functions with TurboFan cost more than they then
 * saved (measured: the reference runtime's 0.4 MB anthropic driver 843 ms, 365 ms with Liftoff
 * only; `--no-liftoff` 3 s). A V8 flag is process-wide, and the runtime's own components must keep
 * normal tiering, so the transpile gets a process whose flags are its own; the transpiler's ≈ 100 MB
 * of memory goes with that process instead of staying in the runtime's heap, and the event loop
 * keeps serving meanwhile.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ComponentLoadError } from './errors.ts';
import type { Meta } from './transpile-jco.ts';
import { frameJob, type TranspileJob } from './transpile-jobs.ts';
import type { PageStep } from './transpile-pages.ts';

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const CHILD = fileURLToPath(new URL(FROM_SOURCES ? './transpile-child.ts' : './transpile-child.js', import.meta.url));
/** V8 flags of the transpile's process: Liftoff, the baseline compiler, only (see above). */
export const TRANSPILE_NODE_FLAGS = ['--liftoff-only'];

/**
 * One transpile at a time: each peaks at ≈ 100 MB (measured, either component), and a pod's memory
 * limit counts every process in it, so two at once would raise a first run's peak by that much
 * again. The jobs queue for one transpiler process, which takes them one after another and is
 * ended (its stdin closed) once the queue is empty; a job that arrives later starts a new one.
 */
interface Queued extends TranspileJob {
  resolve(meta: Meta): void;
  reject(e: Error): void;
}

const queue: Queued[] = [];
let current: Transpiler | undefined;
let started = 0;

/** How many transpiler processes this process has started (tests: jobs queued together share one). */
export function transpilerStarts(): number {
  return started;
}

/** The PID of the transpiler process now running, if one is (tests: a process that dies mid-job). */
export function transpilerPid(): number | undefined {
  return current && !current.exited ? current.pid : undefined;
}

export function transpileInChild(name: string, bytes: Uint8Array, dir: string): Promise<Meta> {
  return new Promise<Meta>((resolve, reject) => {
    queue.push({ name, bytes, dir, resolve, reject });
    pump();
  });
}

function pump(): void {
  if (current?.busy) return;
  const job = queue.shift();
  if (!job) {
    current?.end();
    current = undefined;
    return;
  }
  if (!current || current.exited) current = new Transpiler();
  // The next job goes to the same process, or a fresh one if this one has ended (checked above).
  current.run(job).then(job.resolve, job.reject).finally(pump);
}

/** One transpiler process: a job at a time, its reply the next line on stdout (transpile-child.ts). */
class Transpiler {
  exited = false;
  private readonly child: ChildProcessWithoutNullStreams;
  private out = '';
  private err = '';
  private waiting: { name: string; settle(reply: Reply | Error): void } | undefined;

  constructor() {
    started++;
    // From the TypeScript sources the child needs tsx, by absolute URL (the cwd may be anywhere).
    const loader = FROM_SOURCES ? ['--import', import.meta.resolve('tsx')] : [];
    // node:child_process when a transpile is due (a warm cache never starts one).
    this.child = process.getBuiltinModule('node:child_process').spawn(process.execPath, [...TRANSPILE_NODE_FLAGS, ...loader, CHILD], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // Nothing of the runtime's environment (secrets, NODE_OPTIONS) reaches the transpiler.
      env: { PATH: process.env.PATH ?? '' },
    });
    this.child.stdout.on('data', (d: Buffer) => {
      this.out += d.toString();
      for (let nl = this.out.indexOf('\n'); nl >= 0; nl = this.out.indexOf('\n')) {
        const line = this.out.slice(0, nl);
        this.out = this.out.slice(nl + 1);
        // A reply is a JSON object with `meta` or `error`; anything else a library printed is kept
        // with stderr's tail for the error message, never taken for a job's answer.
        const reply = parseReply(line);
        if (reply) this.settle(reply);
        else this.err = `${this.err + line}\n`.slice(-4000);
      }
    });
    this.child.stderr.on('data', (d: Buffer) => (this.err = (this.err + d.toString()).slice(-4000)));
    this.child.on('error', (e) => {
      this.exited = true;
      this.settle(
        new ComponentLoadError(this.waiting?.name ?? 'component', `cannot start the transpiler process (${process.execPath}): ${e.message}`, undefined, e),
      );
    });
    this.child.on('close', (code, signal) => {
      this.exited = true;
      const why = `the transpiler process ended with ${signal ?? `exit code ${code}`}`;
      this.settle(new Error(`${why}${this.err.trim() ? `: ${this.err.trim().split('\n').slice(-3).join(' | ')}` : ''}`));
    });
    this.child.stdin.on('error', () => {}); // a child that failed early closes its stdin; its exit says why
  }

  /** A job is out: its answer (or the process's end) has not come yet. */
  get busy(): boolean {
    return this.waiting !== undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  run(job: TranspileJob): Promise<Meta> {
    return new Promise<Meta>((resolve, reject) => {
      this.waiting = {
        name: job.name,
        settle: (reply) => {
          if (reply instanceof ComponentLoadError) return reject(reply);
          if (reply instanceof Error) return reject(new ComponentLoadError(job.name, reply.message));
          if (reply.meta) return resolve(reply.meta);
          reject(new ComponentLoadError(job.name, reply.error ?? 'the transpiler replied without a result', reply.hint));
        },
      };
      for (const part of frameJob(job)) this.child.stdin.write(part);
    });
  }

  /** No more jobs: the child ends when its stdin closes. */
  end(): void {
    this.child.stdin.end();
  }

  private settle(reply: Reply | Error): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.settle(reply);
  }
}

/** A job's answer; `pages`: the binary's page releases the process made so far (transpile-pages.ts). */
export type Reply = { meta?: Meta; error?: string; hint?: string; pages?: PageStep[] };

/** A job's answer from one stdout line of the transpiler process, or undefined for any other line. */
export function parseReply(line: string): Reply | undefined {
  try {
    const r = JSON.parse(line) as Reply | null;
    return r && typeof r === 'object' && (r.meta !== undefined || typeof r.error === 'string') ? r : undefined;
  } catch {
    return undefined;
  }
}
