/**
 * Processes a bench serves from, measured as a tree: RSS, VmHWM, CPU and private memory summed over
 * a process and its descendants (this runtime transpiles in child processes), the tree's peak RSS
 * sampled, and a serving process whose A2A URL is read from its output.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times. */
export const CLK = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim() || 100);

export interface Tree {
  rss: number;
  /**
   * RSS less file-backed pages (RssAnon + RssShmem): what the processes hold of their own. A
   * process and the child it starts map the same node binary, whose pages RSS counts in each (≈ 40
   * MiB a node process) though the kernel holds them once: this sum plus one node's file pages is
   * the tree's memory; the RSS sum counts every node's.
   */
  anon: number;
  hwm: number;
  cpuMs: number;
}

/** A process and its descendants, the root first (children read from /proc/<pid>/stat's ppid). */
export function treePids(root: number): number[] {
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
  const out: number[] = [];
  const visit = (pid: number): void => {
    out.push(pid);
    for (const k of kids.get(pid) ?? []) visit(k);
  };
  visit(root);
  return out;
}

/** RSS, anonymous RSS, VmHWM and CPU (own + reaped children) summed over a process and its descendants. */
export function treeStat(root: number): Tree {
  const out: Tree = { rss: 0, anon: 0, hwm: 0, cpuMs: 0 };
  for (const pid of treePids(root)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
      const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.rss += kb('VmRSS');
      out.anon += kb('RssAnon') + kb('RssShmem');
      out.hwm += kb('VmHWM');
      out.cpuMs += ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK) * 1000;
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** User + system CPU (ms) of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file: one process's or one thread's. */
export function statCpuMs(file: string): number {
  const s = readFileSync(file, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) / CLK) * 1000;
}

/**
 * CPU (user + system, ms) of every thread of a process tree by thread name (/proc/<pid>/task/<tid>/comm):
 * `main` for the root process's own thread, `main (child)` for a child's; V8's compiler and GC
 * helpers are `V8Worker`, a worker thread `WorkerThread`, the reference's `tokio-rt-worker`. A
 * thread that ended is no longer counted: read it before and after a window and take the
 * difference (`threadCpuPer`).
 */
export function treeThreads(root: number): Map<string, number> {
  const out = new Map<string, number>();
  forEachThread(root, (dir, pid, own) => {
    const name = own ? (pid === root ? 'main' : 'main (child)') : readFileSync(`${dir}/comm`, 'utf8').trim();
    out.set(name, (out.get(name) ?? 0) + statCpuMs(`${dir}/stat`));
  });
  return out;
}

/**
 * Calls `each` with the /proc folder of every thread of a process tree (`/proc/<pid>/task/<tid>`),
 * its process and whether it is that process's own thread. A process or thread that ends between
 * the listing and the read is skipped (`each` throwing on its files is taken for that).
 */
function forEachThread(root: number, each: (dir: string, pid: number, own: boolean) => void): void {
  for (const pid of treePids(root)) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // gone meanwhile
    }
    for (const tid of tids) {
      try {
        each(`/proc/${pid}/task/${tid}`, pid, tid === String(pid));
      } catch {
        // the thread ended between the listing and the read
      }
    }
  }
}

/** Context switches of every thread of a process tree, summed. */
export interface Switches {
  /** The thread gave up its core: it waited (a lock, a socket, a message, Atomics.wait) — each wait ends in a wake-up. */
  voluntary: number;
  /** The thread was taken off its core while it could have run on (its slice ended; a busy machine). */
  involuntary: number;
}

/**
 * The context switches of every thread of a process tree so far (/proc/<pid>/task/<tid>/status).
 * Read before and after a window: the voluntary ones are how often its threads went to sleep and
 * had to be woken, which on a busy node each costs a wait for a core. A thread that ended is no
 * longer counted.
 */
export function treeSwitches(root: number): Switches {
  const out: Switches = { voluntary: 0, involuntary: 0 };
  forEachThread(root, (dir) => {
    const status = readFileSync(`${dir}/status`, 'utf8');
    out.voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    out.involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  });
  return out;
}

/** Per-thread-name CPU between two `treeThreads` readings, per task (`n` tasks). */
export function threadCpuPer(before: Map<string, number>, after: Map<string, number>, n: number): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / n]));
}

/** A breakdown as `name ms, …`, largest first, those under 0.05 ms left out. */
export function threadLine(per: Map<string, number>): string {
  return [...per]
    .filter(([, v]) => v >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
}

export interface Memory {
  rss: number;
  /**
   * Private_Clean + Private_Dirty (smaps_rollup): the pages only this tree maps, what the node gets
   * back when it ends. RSS also counts shared pages (the binary, libc, node's own text).
   */
  priv: number;
  /**
   * Anonymous (smaps_rollup): the tree's own memory — heaps, stacks, copies made on write — without
   * any file's pages. Private_Clean also counts a file's pages when no other process maps them at
   * that moment: the Node binary's, once the other processes of the image on a node have let theirs
   * go at their idle release (runtime/native/exe.c). Those stay in the page cache when the tree ends,
   * so a node does not get them back then; this row is what it does get back.
   */
  anon: number;
}

/** RSS, private and anonymous memory summed over a process and its descendants, from /proc/<pid>/smaps_rollup. */
export function treeMemory(root: number): Memory {
  const out: Memory = { rss: 0, priv: 0, anon: 0 };
  for (const pid of treePids(root)) {
    try {
      const t = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(t)?.[1] ?? 0) * 1024;
      out.rss += kb('Rss');
      out.priv += kb('Private_Clean') + kb('Private_Dirty');
      out.anon += kb('Anonymous');
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * The tree's RSS (or `field`: its anonymous RSS) sampled every `everyMs` until `stop()`, which
 * returns the highest sum seen: what the node had to hold at once. VmHWM summed over processes
 * overstates it (each process peaks at its own time) and misses children that exited before it is read.
 */
export function samplePeak(root: number, everyMs = 20, field: 'rss' | 'anon' = 'rss'): { stop(): number } {
  let peak = treeStat(root)[field];
  const timer = setInterval(() => (peak = Math.max(peak, treeStat(root)[field])), everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, treeStat(root)[field]);
    },
  };
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
    proc,
    t0,
    url,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}
