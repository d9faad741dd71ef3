/**
 * The shell tool (`murmur:shell/execute`, research/murmur.md §5.6):
 *
 * | Behaviour             | Detail                                                                   |
 * |-----------------------|--------------------------------------------------------------------------|
 * | Allowlist             | `binary` must be in `capabilities.shell.allow`; else refused before spawn |
 * | Non-zero exit code    | data, not an error; only a spawn/IO failure is an error                  |
 * | `truncated: true`     | stdout or stderr exceeded 16 KiB and both were cut to 16 KiB;            |
 * |                       | `fullOutputPath` names the untruncated log in the workdir                |
 *
 * Spawned without a shell (no expansion, no globbing): the resolved binary is executed with
 * argv[0] = the invoked name, cwd = workdir, stdin = /dev/null, HOME = workdir, credential-shaped
 * variables stripped (env.ts). A signal death reports exit code 128 + signal number. A timeout
 * kills the process group (SIGKILL) and is data too (`timedOut: true`). An AbortSignal kills it
 * and rejects with the signal's reason. The command runs in its own process group; background
 * processes it leaves holding its output pipes are killed once the pipes have been idle for 2 s
 * after it exited (`PIPE_GRACE_MS`), or 10 s after it exited at the latest (`PIPE_DRAIN_MAX_MS`).
 *
 * Output past 16 KiB is spilled to disk as it arrives (memory stays bounded) and assembled into
 * `logs/shell-<unix-ms>[-k].log` under the workdir: a header line with the command and exit code,
 * then `--- stdout (N bytes) ---`, the full stdout, `--- stderr (N bytes) ---`, the full stderr
 * (output-capture.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { constants as osc } from 'node:os';
import path from 'node:path';
import { MurError } from '../errors.ts';
import { shellEnv } from './env.ts';
import { shellEventIdentity, type ShellIdentity } from './identity.ts';
import { OutputCapture } from './output-capture.ts';
import { assertShellAllowed } from './resolve.ts';

export { SHELL_OUTPUT_LIMIT, cutUtf8 } from './output-capture.ts';
/** After the process exited, its pipes are read until they have been idle this long (background children). */
export const PIPE_GRACE_MS = 2000;
/** ...but never longer than this after the exit (a background process that keeps printing). */
export const PIPE_DRAIN_MAX_MS = 10_000;

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

export interface RunShellOptions {
  /** The name as invoked (checked against `allow`). */
  binary: string;
  args: readonly string[];
  /** Session workdir: cwd, HOME, and where overflow logs go. */
  workdir: string;
  /** `capabilities.shell.allow`. */
  allow: readonly string[];
  /** Host environment to start from (credential-shaped names are stripped). */
  env: Readonly<Record<string, string | undefined>>;
  /** Manifest strip globs, on top of the built-in list. */
  stripEnvGlobs?: readonly string[];
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Where overflow logs go, relative to the workdir (default `logs`). */
  logDir?: string;
  /**
   * An identity already built for the decision point (`shellEventIdentity`). When given, exactly
   * that binary and argv are executed, so what a policy hook approved is what runs.
   */
  identity?: ShellIdentity;
  /** Told the child's pid once it runs and a timeout or abort would kill it (tracing, tests). */
  onSpawn?: (pid: number) => void;
}

export interface ShellResult {
  exitCode: number;
  /** The terminating signal's name, when a signal ended the process. */
  signal?: string;
  /** At most 16 KiB each (cut on a UTF-8 character boundary) when `truncated`. */
  stdout: string;
  stderr: string;
  /** Full sizes in bytes. */
  stdoutBytes: number;
  stderrBytes: number;
  truncated: boolean;
  /** Workdir-relative (POSIX) path of the untruncated log, when truncated. */
  fullOutputPath?: string;
  timedOut: boolean;
  durationMs: number;
  identity: ShellIdentity;
  /** Names of the environment variables that were stripped. */
  strippedEnv: string[];
}

let seq = 0;

type Exit = { code: number | null; signal: NodeJS.Signals | null };

export async function runShell(opts: RunShellOptions): Promise<ShellResult> {
  const { workdir, identity } = await checkedCall(opts);
  const { env, stripped } = shellEnv({ env: opts.env, stripEnvGlobs: opts.stripEnvGlobs, home: workdir, cwd: workdir });
  const started = performance.now();
  const capture = new OutputCapture(path.join(workdir, opts.logDir ?? 'logs'), `${Date.now()}-${process.pid}-${++seq}`);
  const child = spawnChild(identity, opts.binary, workdir, env);
  capture.attach(child.stdout, child.stderr);

  let timedOut = false;
  const timer =
    opts.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          killGroup(child);
        }, opts.timeoutMs)
      : undefined;
  const onAbort = () => killGroup(child);
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (child.pid !== undefined) opts.onSpawn?.(child.pid);

  let exit: Exit;
  try {
    exit = await waitForExit(child, capture, identity);
  } catch (e) {
    await capture.cleanup();
    throw e;
  } finally {
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
  await capture.settle();
  const durationMs = Math.round(performance.now() - started);

  if (opts.signal?.aborted && !timedOut) {
    await capture.cleanup();
    throw opts.signal.reason;
  }
  if (capture.ioError !== undefined) {
    await capture.cleanup();
    throw ioFailure(identity, capture.ioError);
  }
  return result(capture, exit, { workdir, identity, timedOut, durationMs, strippedEnv: stripped });
}

/** The checks before anything runs: the allowlist, the abort, the workdir, the identity to execute. */
async function checkedCall(opts: RunShellOptions): Promise<{ workdir: string; identity: ShellIdentity }> {
  assertShellAllowed(opts.binary, opts.allow);
  opts.signal?.throwIfAborted();
  const workdir = path.resolve(opts.workdir);
  const wst = await stat(workdir).catch(() => undefined);
  if (!wst?.isDirectory()) {
    throw new MurError('E-SHELL-003', `shell workdir ${JSON.stringify(workdir)} is not a directory`, {
      hint: 'stage the session before running shell commands; the workdir must exist',
    });
  }
  const identity = opts.identity ?? (await shellEventIdentity({ binary: opts.binary, args: opts.args, workdir, env: opts.env }));
  if (identity.invoked !== opts.binary) {
    throw new MurError('E-SHELL-004', `shell identity was built for ${JSON.stringify(identity.invoked)}, not ${JSON.stringify(opts.binary)}`, {
      hint: 'pass the identity built for this very call',
    });
  }
  if (!identity.resolved) {
    const e = Object.assign(new Error('not found'), { code: 'ENOENT' });
    throw spawnError(identity, e);
  }
  return { workdir, identity };
}

function spawnChild(identity: ShellIdentity, invoked: string, workdir: string, env: NodeJS.ProcessEnv): ChildProcess {
  try {
    // node:child_process on first use: a capsule without the shell tool never loads it.
    return process.getBuiltinModule('node:child_process').spawn(identity.binary, identity.argv, {
      argv0: invoked,
      cwd: workdir,
      env,
      shell: false,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
      // Own process group, so a timeout or abort kills the command's children too.
      detached: true,
    });
  } catch (e) {
    throw spawnError(identity, e);
  }
}

/**
 * The command's exit, once its pipes are done. A background process the command left behind may
 * keep the pipes open: once they have been idle for PIPE_GRACE_MS after the exit (and no spill is
 * being set up), what is left of the group is killed and reading stops. The final check runs after
 * a poll phase (setImmediate), so output already sitting in a pipe is read first even if the event
 * loop was blocked for longer than the grace period.
 */
function waitForExit(child: ChildProcess, capture: OutputCapture, identity: ShellIdentity): Promise<Exit> {
  return new Promise((resolve, reject) => {
    child.once('error', (e) => reject(spawnError(identity, e)));
    child.once('exit', (code, signal) => {
      let closed = false;
      let grace: NodeJS.Timeout | undefined;
      const exitedAt = performance.now();
      const idle = () => (capture.spilling === 0 && performance.now() - capture.lastData >= PIPE_GRACE_MS) || performance.now() - exitedAt >= PIPE_DRAIN_MAX_MS;
      const check = () => {
        if (closed) return;
        if (!idle()) {
          grace = setTimeout(check, PIPE_GRACE_MS);
          return;
        }
        setImmediate(() => {
          if (closed) return;
          if (!idle()) {
            grace = setTimeout(check, PIPE_GRACE_MS);
            return;
          }
          closed = true;
          killGroup(child);
          child.stdout?.destroy();
          child.stderr?.destroy();
          resolve({ code, signal });
        });
      };
      grace = setTimeout(check, PIPE_GRACE_MS);
      child.once('close', () => {
        closed = true;
        if (grace) clearTimeout(grace);
        resolve({ code, signal });
      });
    });
  });
}

/** The ShellResult of a run that exited; a truncated run's full log is written first. */
async function result(
  capture: OutputCapture,
  exit: Exit,
  o: { workdir: string; identity: ShellIdentity; timedOut: boolean; durationMs: number; strippedEnv: string[] },
): Promise<ShellResult> {
  const exitCode = exit.code ?? (exit.signal ? 128 + (osc.signals[exit.signal] ?? 0) : -1);
  const [stdout, stderr] = capture.caps;
  const truncated = capture.truncated;
  const r: ShellResult = {
    exitCode,
    stdout: capture.text(0),
    stderr: capture.text(1),
    stdoutBytes: stdout.total,
    stderrBytes: stderr.total,
    truncated,
    timedOut: o.timedOut,
    durationMs: o.durationMs,
    identity: o.identity,
    strippedEnv: o.strippedEnv,
  };
  if (exit.signal) r.signal = exit.signal;
  if (truncated) {
    try {
      r.fullOutputPath = await capture.writeFullLog(o.workdir, o.identity, exitCode);
    } catch (e) {
      throw ioFailure(o.identity, e);
    } finally {
      await capture.cleanup();
    }
  }
  return r;
}

function spawnError(identity: ShellIdentity, e: unknown): MurError {
  const err = e as NodeJS.ErrnoException;
  const why = err.code === 'ENOENT' ? (identity.resolved ? 'the file is gone' : 'not found on PATH') : err.message;
  return new MurError('E-SHELL-002', `cannot start shell binary ${JSON.stringify(identity.invoked)} (${identity.binary}): ${why}`, {
    hint: identity.resolved
      ? 'check the binary is executable inside the capsule environment'
      : `install ${JSON.stringify(identity.invoked)} or make sure it is on PATH for the runtime`,
    cause: e,
  });
}

function ioFailure(identity: ShellIdentity, e: unknown): MurError {
  return new MurError('E-SHELL-005', `shell output of ${JSON.stringify(identity.invoked)} could not be written to the workdir: ${(e as Error).message}`, {
    hint: 'check the workdir is writable and has free space (logs/ holds the full output of long commands)',
    cause: e,
  });
}
