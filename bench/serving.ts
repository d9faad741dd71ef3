/**
 * `mur serve` as a bench's subject: spawned from bin/mur (sources through tsx or compiled dist/),
 * with /proc figures of its process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { tmp } from '../test/loop/kit.ts';
import { imageCommand, type ImageRoot } from './image-root.ts';
import { statCpuMs } from './proc-tree.ts';

export const MUR = join(PROJECT_ROOT, 'bin/mur');
/** Where a bench runs `mur` from unless told: compiled dist/ once `npm run build` made it, else the sources through tsx. */
export const BUILT_FROM: 'src' | 'dist' = existsSync(join(PROJECT_ROOT, 'dist/.built')) ? 'dist' : 'src';

export interface ProcStat {
  rss: number;
  hwm: number;
  cpuMs: number;
}

export function procStat(pid: number): ProcStat {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), cpuMs: statCpuMs(`/proc/${pid}/stat`) };
}

/** RSS once the process has been idle a while (spares and pooled workers made, GC settled). */
export async function idleRss(pid: number): Promise<number> {
  await new Promise((r) => setTimeout(r, 2500));
  return procStat(pid).rss;
}

/** The node flags of the Dockerfile's ENTRYPOINT, as written. */
export function entrypointFlags(): string[] {
  const text = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
  const entry = text.split('\n').find((l) => l.startsWith('ENTRYPOINT '));
  if (!entry) throw new Error('Dockerfile has no ENTRYPOINT line');
  return (JSON.parse(entry.slice('ENTRYPOINT '.length)) as string[]).slice(1).filter((a) => a.startsWith('--'));
}

/**
 * How the runtime image starts node (Dockerfile): the ENTRYPOINT's node flags and the ENV's glibc
 * malloc settings and NODE_OPTIONS (the heap limit), so a bench can run `mur` as a pod does.
 */
export function imageProcess(): { nodeFlags: string[]; env: Record<string, string> } {
  const text = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
  // The image's `--max-opt=2` stops at Maglev, which V8 before 11.7 (Node 20) has off: there it
  // would stop at Sparkplug, a tier the image never runs at. Node 20 keeps its own top tier.
  const nodeFlags = entrypointFlags().filter((a) => !(a.startsWith('--max-opt') && !maglevByDefault()));
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/^\s*(?:ENV\s+)?(MALLOC_[A-Z_]+|NODE_OPTIONS)=(\S+?)\s*\\?$/gm)) env[m[1]!] = m[2]!;
  return { nodeFlags, env };
}

/** Whether this node's V8 runs Maglev by default (V8 ≥ 11.7: Node 22 and later). */
export function maglevByDefault(v8 = process.versions.v8): boolean {
  const [major = 0, minor = 0] = v8.split('.').map(Number);
  return major > 11 || (major === 11 && minor >= 7);
}

/** How a bench starts `mur`: see murCommand. */
export interface MurOptions {
  asImage?: boolean;
  image?: ImageRoot;
  /** Another checkout whose bin/mur runs (its own dist/ or sources), e.g. a `git worktree` of another commit; this one by default. */
  root?: string;
  /** Node flags after the image's (e.g. `--cpu-prof`), in the image's chroot too. */
  nodeFlags?: string[];
}

/**
 * The command and environment that run `mur <args>` as a bench's subject: the runtime image itself
 * (`image`: its Node, /app and ENV in its chroot, image-root.ts), or bin/mur of this checkout (or
 * `root`) on this machine's node from `from`, with the image's node flags and ENV when `asImage`.
 * `env` is laid over either.
 */
export function murCommand(
  args: string[],
  env: Record<string, string>,
  opts: { from: 'src' | 'dist' } & MurOptions,
): { cmd: string; args: string[]; env: Record<string, string> } {
  if (opts.image) return { ...imageCommand(opts.image, args, opts.nodeFlags), env: { ...opts.image.env, ...env } };
  const image = opts.asImage ? imageProcess() : { nodeFlags: [], env: {} };
  const mur = opts.root ? join(opts.root, 'bin/mur') : MUR;
  return {
    cmd: process.execPath,
    args: [...image.nodeFlags, ...(opts.nodeFlags ?? []), mur, ...args],
    env: { PATH: process.env.PATH!, MUR_FROM: opts.from, ...image.env, ...env },
  };
}

export interface Serving {
  proc: ChildProcess;
  url: Promise<string>;
  t0: number;
  stop(): Promise<void>;
}

/**
 * `mur serve` as its own process on free ports, quiet; `url` resolves once it serves.
 * `asImage`: node started with the image's flags and ENV (on this machine's node, from `from`);
 * `image`: the runtime image itself (its Node, /app, ENV; image-root.ts), where `from` is moot;
 * `root`, `nodeFlags`: murCommand.
 */
export function serve(
  from: 'src' | 'dist',
  capsule: string,
  registry: string,
  env: Record<string, string>,
  args: string[] = [],
  opts: MurOptions = {},
): Serving {
  const t0 = performance.now();
  const c = murCommand(
    ['serve', capsule, '--a2a-port', '0', '--metrics-port', '0', '--registry', registry, '--workdir', tmp('stack-work-'), '--quiet', ...args],
    env,
    { from, ...opts },
  );
  const proc = spawn(c.cmd, c.args, { env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = new Promise<string>((resolve, reject) => {
    const on = (d: Buffer): void => {
      out += d.toString();
      const m = /serving \S+ \S+ at (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    void exited.then(() => reject(new Error(`mur serve exited:\n${out}`)));
  });
  return {
    proc,
    url,
    t0,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** The answer to one `message/send`: its HTTP status and body text. */
export interface SendAnswer {
  status: number;
  body: string;
}

/**
 * One A2A JSON-RPC `message/send` of a user text message to a serving capsule (blocking, as a
 * plain client sends it), through `agent`; resolves with the answer whatever it says, rejects on a
 * connection error. What a task's answer means is the caller's: sendTask insists on completed, the
 * soak counts rejections.
 */
export function sendMessage(url: string, id: number, text: string, agent: http.Agent): Promise<SendAnswer> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: `m${id}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text }] } },
  });
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One A2A `message/send` of a text task to a serving capsule; resolves once it answers completed. */
export async function sendTask(url: string, i: number, agent: http.Agent): Promise<void> {
  const a = await sendMessage(url, i, `task ${i}`, agent);
  const j = JSON.parse(a.body) as { result?: { status?: { state?: string } } };
  if (j.result?.status?.state !== 'completed') throw new Error(`task ${i}: ${a.body.slice(0, 400)}`);
}
