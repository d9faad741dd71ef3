/** Runs `bin/mur serve` as a separate process and hands back its A2A URL. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

export interface Served {
  url: string;
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export async function serve(
  capsuleDir: string,
  o: { registry: string; workRoot: string; env: Record<string, string | undefined>; args?: string[] },
): Promise<Served> {
  const proc = spawn(
    process.execPath,
    [
      join(PROJECT_ROOT, 'bin/mur'),
      'serve',
      capsuleDir,
      '--a2a-port',
      '0',
      '--metrics-port',
      '0',
      '--registry',
      o.registry,
      '--workdir',
      o.workRoot,
      ...(o.args ?? []),
    ],
    {
      env: { PATH: process.env.PATH, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mur serve did not start:\n${out}`)), 120_000);
    const check = (): void => {
      const m = /serving \S+ \S+ at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`mur serve exited ${code}:\n${out}`));
    });
  });
  return {
    url,
    proc,
    output: () => out,
    exited,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/**
 * Resolves with the output once it matches every pattern (the process's own lines, no sleep);
 * rejects, saying what it printed, when its output ends without them.
 */
export function printed(s: Served, ...patterns: RegExp[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      if (!patterns.every((p) => p.test(s.output()))) return false;
      s.proc.stdout!.off('data', check);
      resolve(s.output());
      return true;
    };
    if (check()) return;
    s.proc.stdout!.on('data', check);
    // 'close', not 'exit': the last lines may still be in the pipe when the process has exited.
    s.proc.once('close', () => {
      if (!check()) reject(new Error(`mur serve ended without printing ${patterns.join(' and ')}:\n${s.output()}`));
    });
  });
}

/** A port free on 127.0.0.1 right now (for a server started in another process). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** A gate a provider turn waits on, with an event for the request's arrival. */
export function gate() {
  let open!: () => void;
  let arrived!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const arrival = new Promise<void>((r) => (arrived = r));
  return { open, arrival, hold: () => (arrived(), opened) };
}
