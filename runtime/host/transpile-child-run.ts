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
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ComponentLoadError } from './errors.ts';
import type { Meta } from './transpile-jco.ts';

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const CHILD = fileURLToPath(new URL(FROM_SOURCES ? './transpile-child.ts' : './transpile-child.js', import.meta.url));
/** V8 flags of the transpile's process: Liftoff, the baseline compiler, only (see above). */
export const TRANSPILE_NODE_FLAGS = ['--liftoff-only'];

/**
 * One transpile at a time: each child peaks at ≈ 100 MB (measured, either component), and a pod's
 * memory limit counts every process in it, so two at once would raise a first run's peak by that
 * much again. The queue keeps a first run's peak where an in-process transpile had it.
 */
let queue: Promise<unknown> = Promise.resolve();

export function transpileInChild(name: string, bytes: Uint8Array, dir: string): Promise<Meta> {
  const run = queue.then(() => runChild(name, bytes, dir));
  queue = run.catch(() => undefined);
  return run;
}

function runChild(name: string, bytes: Uint8Array, dir: string): Promise<Meta> {
  // From the TypeScript sources the child needs tsx, by absolute URL (the cwd may be anywhere).
  const loader = FROM_SOURCES ? ['--import', import.meta.resolve('tsx')] : [];
  return new Promise<Meta>((resolve, reject) => {
    const child = spawn(process.execPath, [...TRANSPILE_NODE_FLAGS, ...loader, CHILD, dir, name], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // Nothing of the runtime's environment (secrets, NODE_OPTIONS) reaches the transpiler.
      env: { PATH: process.env.PATH ?? '' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => reject(new ComponentLoadError(name, `cannot start the transpiler process (${process.execPath}): ${e.message}`, undefined, e)));
    child.on('close', (code, signal) => {
      let reply: { meta?: Meta; error?: string; hint?: string } | undefined;
      try {
        reply = JSON.parse(out.trim().split('\n').pop() ?? '') as typeof reply;
      } catch {
        reply = undefined;
      }
      if (code === 0 && reply?.meta) return resolve(reply.meta);
      if (reply?.error !== undefined) return reject(new ComponentLoadError(name, reply.error, reply.hint));
      reject(new ComponentLoadError(name, `the transpiler process ended with ${signal ?? `exit code ${code}`}${err.trim() ? `: ${err.trim().split('\n').slice(-3).join(' | ')}` : ''}`));
    });
    child.stdin.on('error', () => {}); // a child that failed early closes its stdin; its exit says why
    child.stdin.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  });
}
