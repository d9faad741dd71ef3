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
 * then `--- stdout (N bytes) ---`, the full stdout, `--- stderr (N bytes) ---`, the full stderr.
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, open, rm, stat } from 'node:fs/promises';
import { constants as osc } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { MurError } from '../errors.ts';
import { shellEnv } from './env.ts';
import { shellEventIdentity, type ShellIdentity } from './identity.ts';
import { assertShellAllowed } from './resolve.ts';

export const SHELL_OUTPUT_LIMIT = 16 * 1024;
/** After the process exited, its pipes are read until they have been idle this long (background children). */
export const PIPE_GRACE_MS = 2000;
/** ...but never longer than this after the exit (a background process that keeps printing). */
export const PIPE_DRAIN_MAX_MS = 10_000;

function killGroup(child: import('node:child_process').ChildProcess): void {
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

/** Cut `buf` to at most `limit` bytes without splitting a UTF-8 sequence. */
export function cutUtf8(buf: Buffer, limit: number): Buffer {
  if (buf.length <= limit) return buf;
  let end = limit;
  // Step back over continuation bytes (10xxxxxx) to the lead byte, then drop it if incomplete.
  let i = end;
  while (i > 0 && (buf[i]! & 0xc0) === 0x80) i--;
  if (i < end) {
    const lead = buf[i]!;
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (i + need > end) end = i;
  }
  return buf.subarray(0, end);
}

class Capture {
  readonly head: Buffer[] = [];
  headBytes = 0;
  total = 0;
  spill: WriteStream | undefined;
  spillPath: string | undefined;
  constructor(readonly name: 'stdout' | 'stderr') {}
}

let seq = 0;

export async function runShell(opts: RunShellOptions): Promise<ShellResult> {
  assertShellAllowed(opts.binary, opts.allow);
  opts.signal?.throwIfAborted();
  const workdir = path.resolve(opts.workdir);
  const wst = await stat(workdir).catch(() => undefined);
  if (!wst?.isDirectory()) {
    throw new MurError('E-SHELL-003', `shell workdir ${JSON.stringify(workdir)} is not a directory`, {
      hint: 'stage the session before running shell commands; the workdir must exist',
    });
  }
  const identity =
    opts.identity ?? (await shellEventIdentity({ binary: opts.binary, args: opts.args, workdir, env: opts.env }));
  if (identity.invoked !== opts.binary) {
    throw new MurError('E-SHELL-004', `shell identity was built for ${JSON.stringify(identity.invoked)}, not ${JSON.stringify(opts.binary)}`, {
      hint: 'pass the identity built for this very call',
    });
  }
  if (!identity.resolved) {
    const e = Object.assign(new Error('not found'), { code: 'ENOENT' });
    throw spawnError(identity, e);
  }
  const { env, stripped } = shellEnv({ env: opts.env, stripEnvGlobs: opts.stripEnvGlobs, home: workdir, cwd: workdir });
  const logDir = path.join(workdir, opts.logDir ?? 'logs');
  const started = performance.now();
  const stamp = `${Date.now()}-${process.pid}-${++seq}`;

  const child = (() => {
    try {
      // node:child_process on first use: a capsule without the shell tool never loads it.
      return process.getBuiltinModule('node:child_process').spawn(identity.binary, identity.argv, {
        argv0: opts.binary,
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
  })();

  const caps = [new Capture('stdout'), new Capture('stderr')] as const;
  let ioError: unknown;
  const spillTo = async (c: Capture) => {
    await mkdir(logDir, { recursive: true });
    c.spillPath = path.join(logDir, `.shell-${stamp}.${c.name}.part`);
    c.spill = createWriteStream(c.spillPath, { flags: 'wx' });
    c.spill.on('error', (e) => (ioError ??= e));
    for (const b of c.head) c.spill.write(b);
  };
  const pending: Promise<void>[] = [];
  let spilling = 0;
  let lastData = performance.now();
  const onData = (c: Capture) => (chunk: Buffer) => {
    lastData = performance.now();
    c.total += chunk.length;
    if (ioError !== undefined) return; // the call fails anyway; stop holding output
    if (c.spill) {
      c.spill.write(chunk);
      return;
    }
    c.head.push(chunk);
    c.headBytes += chunk.length;
    if (c.headBytes > SHELL_OUTPUT_LIMIT && !c.spillPath) {
      c.spillPath = 'pending';
      const stream = c === caps[0] ? child.stdout : child.stderr;
      stream?.pause();
      spilling++;
      pending.push(
        spillTo(c)
          .catch((e) => {
            ioError ??= e;
          })
          .finally(() => {
            spilling--;
            lastData = performance.now();
            stream?.resume();
          }),
      );
    }
  };
  child.stdout?.on('data', onData(caps[0]));
  child.stderr?.on('data', onData(caps[1]));

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

  let exit: { code: number | null; signal: NodeJS.Signals | null };
  try {
    exit = await new Promise((resolve, reject) => {
      child.once('error', (e) => reject(spawnError(identity, e)));
      child.once('exit', (code, signal) => {
        // A background process the command left behind may keep the pipes open. Once the pipes
        // have been idle for PIPE_GRACE_MS after the exit (and no spill is being set up), kill what
        // is left of the group and stop reading. The final check runs after a poll phase
        // (setImmediate), so output already sitting in a pipe is read first even if the event
        // loop was blocked for longer than the grace period.
        let closed = false;
        let grace: NodeJS.Timeout | undefined;
        const exitedAt = performance.now();
        const idle = () =>
          (spilling === 0 && performance.now() - lastData >= PIPE_GRACE_MS) || performance.now() - exitedAt >= PIPE_DRAIN_MAX_MS;
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
  } catch (e) {
    await cleanup(caps);
    throw e;
  } finally {
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
  await Promise.all(pending);
  for (const c of caps) if (c.spill) await closeStream(c.spill);
  const durationMs = Math.round(performance.now() - started);

  if (opts.signal?.aborted && !timedOut) {
    await cleanup(caps);
    throw opts.signal.reason;
  }
  if (ioError !== undefined) {
    await cleanup(caps);
    throw ioFailure(identity, ioError);
  }

  const exitCode = exit.code ?? (exit.signal ? 128 + (osc.signals[exit.signal] ?? 0) : -1);
  const truncated = caps.some((c) => c.total > SHELL_OUTPUT_LIMIT);
  const result: ShellResult = {
    exitCode,
    stdout: cutUtf8(Buffer.concat(caps[0].head), SHELL_OUTPUT_LIMIT).toString('utf8'),
    stderr: cutUtf8(Buffer.concat(caps[1].head), SHELL_OUTPUT_LIMIT).toString('utf8'),
    stdoutBytes: caps[0].total,
    stderrBytes: caps[1].total,
    truncated,
    timedOut,
    durationMs,
    identity,
    strippedEnv: stripped,
  };
  if (exit.signal) result.signal = exit.signal;
  if (truncated) {
    try {
      result.fullOutputPath = await writeFullLog(workdir, logDir, stamp, identity, exitCode, caps);
    } catch (e) {
      throw ioFailure(identity, e);
    } finally {
      await cleanup(caps);
    }
  }
  return result;
}

async function writeFullLog(
  workdir: string,
  logDir: string,
  stamp: string,
  identity: ShellIdentity,
  exitCode: number,
  caps: readonly Capture[],
): Promise<string> {
  await mkdir(logDir, { recursive: true });
  const base = `shell-${stamp.split('-')[0]}`;
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  let name = '';
  for (let k = 0; fh === undefined; k++) {
    name = path.join(logDir, k === 0 ? `${base}.log` : `${base}-${k}.log`);
    try {
      fh = await open(name, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || k > 1000) throw e;
    }
  }
  const out = fh.createWriteStream();
  const write = async (s: string | Buffer) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  try {
    await write(`$ ${identity.binary} ${identity.argv.map((a) => JSON.stringify(a)).join(' ')}\nexit code: ${exitCode}\n`);
    for (const c of caps) {
      await write(`--- ${c.name} (${c.total} bytes) ---\n`);
      if (c.spill && c.spillPath) await pipeline(createReadStream(c.spillPath), out, { end: false });
      else for (const b of c.head) await write(b);
      await write('\n');
    }
  } finally {
    await closeStream(out);
  }
  return toPosixRelative(workdir, name);
}

function toPosixRelative(workdir: string, p: string): string {
  return path.relative(workdir, p).split(path.sep).join('/');
}

function closeStream(s: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    s.end((err?: Error | null) => (err ? reject(err) : resolve()));
  });
}

async function cleanup(caps: readonly Capture[]): Promise<void> {
  for (const c of caps) {
    if (c.spill && !c.spill.closed) c.spill.destroy();
    if (c.spillPath && c.spillPath !== 'pending') await rm(c.spillPath, { force: true });
  }
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
