/**
 * Processes a bench serves from, measured as a tree: RSS, VmHWM and CPU summed over a process and
 * its descendants (this runtime transpiles in child processes), and a serving process whose A2A URL
 * is read from its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { CLK } from './serving.ts';

export interface Tree {
  rss: number;
  hwm: number;
  cpuMs: number;
}

/** RSS, VmHWM and CPU (own + reaped children) summed over a process and its descendants. */
export function treeStat(root: number): Tree {
  const kids = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]);
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: Tree = { rss: 0, hwm: 0, cpuMs: 0 };
  const visit = (pid: number): void => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
      const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.rss += kb('VmRSS');
      out.hwm += kb('VmHWM');
      out.cpuMs += ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK) * 1000;
    } catch {
      return;
    }
    for (const k of kids.get(pid) ?? []) visit(k);
  };
  visit(root);
  return out;
}

export interface Served {
  proc: ChildProcess;
  t0: number;
  /** The A2A JSON-RPC URL, once the process printed it. */
  url: Promise<string>;
  stop(): Promise<void>;
}

/** Spawns a serving process; `parse` finds the A2A URL in its output so far. */
export function spawnServer(cmd: string, args: string[], env: Record<string, string>, parse: (out: string) => string | undefined): Served {
  const t0 = performance.now();
  const proc = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = new Promise<string>((resolve, reject) => {
    const on = (d: Buffer): void => {
      out += d.toString();
      const u = parse(out);
      if (u) resolve(u);
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    void exited.then(() => reject(new Error(`${cmd} ${args.join(' ')} exited ${proc.exitCode}:\n${out}`)));
  });
  return {
    proc, t0, url,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

