/**
 * The shell tool's output capture: stdout and stderr are held in memory up to SHELL_OUTPUT_LIMIT
 * each; past it a stream is spilled to a `.part` file under the log folder as it arrives (memory
 * stays bounded), and a truncated run's full output is assembled into `logs/shell-<unix-ms>[-k].log`:
 * a header line with the command and exit code, then `--- stdout (N bytes) ---`, the full stdout,
 * `--- stderr (N bytes) ---`, the full stderr.
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ShellIdentity } from './identity.ts';

export const SHELL_OUTPUT_LIMIT = 16 * 1024;

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

/** The two captured streams of one command, and when output last arrived (for the pipe grace). */
export class OutputCapture {
  readonly caps = [new Capture('stdout'), new Capture('stderr')] as const;
  /** The first failure to spill; the call fails with it. */
  ioError: unknown;
  /** Spills being set up (their stream is paused meanwhile). */
  spilling = 0;
  lastData = performance.now();
  private readonly pending: Promise<void>[] = [];

  constructor(
    private readonly logDir: string,
    private readonly stamp: string,
  ) {}

  /** Starts reading the child's stdout and stderr. */
  attach(stdout: Readable | null, stderr: Readable | null): void {
    stdout?.on('data', this.onData(this.caps[0], stdout));
    stderr?.on('data', this.onData(this.caps[1], stderr));
  }

  private onData(c: Capture, stream: Readable): (chunk: Buffer) => void {
    return (chunk) => {
      this.lastData = performance.now();
      c.total += chunk.length;
      if (this.ioError !== undefined) return; // the call fails anyway; stop holding output
      if (c.spill) {
        c.spill.write(chunk);
        return;
      }
      c.head.push(chunk);
      c.headBytes += chunk.length;
      if (c.headBytes > SHELL_OUTPUT_LIMIT && !c.spillPath) {
        c.spillPath = 'pending';
        stream.pause();
        this.spilling++;
        this.pending.push(
          this.spillTo(c)
            .catch((e) => {
              this.ioError ??= e;
            })
            .finally(() => {
              this.spilling--;
              this.lastData = performance.now();
              stream.resume();
            }),
        );
      }
    };
  }

  private async spillTo(c: Capture): Promise<void> {
    await mkdir(this.logDir, { recursive: true });
    c.spillPath = path.join(this.logDir, `.shell-${this.stamp}.${c.name}.part`);
    c.spill = createWriteStream(c.spillPath, { flags: 'wx' });
    c.spill.on('error', (e) => (this.ioError ??= e));
    for (const b of c.head) c.spill.write(b);
  }

  /** After the exit: waits for spills being set up and closes the spill files. */
  async settle(): Promise<void> {
    await Promise.all(this.pending);
    for (const c of this.caps) if (c.spill) await closeStream(c.spill);
  }

  get truncated(): boolean {
    return this.caps.some((c) => c.total > SHELL_OUTPUT_LIMIT);
  }

  /** What the model sees of one stream: at most SHELL_OUTPUT_LIMIT bytes, cut on a character boundary. */
  text(i: 0 | 1): string {
    return cutUtf8(Buffer.concat(this.caps[i].head), SHELL_OUTPUT_LIMIT).toString('utf8');
  }

  /** Writes the full log of a truncated run; returns its workdir-relative POSIX path. */
  writeFullLog(workdir: string, identity: ShellIdentity, exitCode: number): Promise<string> {
    return writeFullLog(workdir, this.logDir, this.stamp, identity, exitCode, this.caps);
  }

  /** Removes the spill files. */
  async cleanup(): Promise<void> {
    for (const c of this.caps) {
      if (c.spill && !c.spill.closed) c.spill.destroy();
      if (c.spillPath && c.spillPath !== 'pending') await rm(c.spillPath, { force: true });
    }
  }
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
