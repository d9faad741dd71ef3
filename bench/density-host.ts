/**
 * What bench/density.ts reads on the host about one real node: its processes, found in the host's
 * /proc by the memory cgroup the node's kubelet put them in (every pod of node `<name>` lives under
 * its cgroupRoot `/capsule-<name>`, test/cluster/node/config.ts), each one's pod (the `pod<uid>`
 * folder of that cgroup path), its PSS and RSS, the pod cgroup's memory (cgroup v1: this machine
 * kind has no v2), and the load average. Other nodes on the same machine live under other roots,
 * so their processes are never counted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface NodeProcess {
  pid: number;
  argv: string[];
  /** The memory cgroup path, e.g. /capsule-density/kubepods/besteffort/pod<uid>/<container> */
  memoryCgroup: string;
  /** The pod's UID (dashes, as the API server spells it), when the process is in a pod. */
  podUid?: string;
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // the process ended meanwhile, or the file is not open to us
  }
};

/** Every process of the node whose kubelet uses `cgroupRoot` (a node's pods and nothing else). */
export function nodeProcesses(cgroupRoot: string): NodeProcess[] {
  const out: NodeProcess[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const cg = read(`/proc/${e}/cgroup`);
    const memory = cg
      ?.split('\n')
      .map((l) => l.split(':'))
      .find((f) => f[1]?.split(',').includes('memory'))?.[2];
    if (!memory || !(memory === cgroupRoot || memory.startsWith(`${cgroupRoot}/`))) continue;
    const argv = (read(`/proc/${e}/cmdline`) ?? '').split('\0').filter(Boolean);
    if (!argv.length) continue; // a zombie or a kernel thread
    // cgroupfs names the pod's folder pod<uid>; the systemd driver writes the uid's dashes as _
    const uid = /\/pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(\/|$)/.exec(memory)?.[1];
    out.push({ pid: Number(e), argv, memoryCgroup: memory, podUid: uid?.replaceAll('_', '-') });
  }
  return out;
}

/** A field of a /proc file in kB (`Pss:`, `VmRSS:`), in bytes. */
function kbField(text: string | undefined, field: string): number | undefined {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text ?? '');
  return m ? Number(m[1]) * 1024 : undefined;
}

/** Proportional set size: the process's private pages plus its share of pages shared with others (smaps_rollup). */
export const pssBytes = (pid: number): number | undefined => kbField(read(`/proc/${pid}/smaps_rollup`), 'Pss');
export const rssBytes = (pid: number): number | undefined => kbField(read(`/proc/${pid}/status`), 'VmRSS');

export interface CgroupMemory {
  /** memory.usage_in_bytes: everything charged to the pod, page cache included */
  usage: number;
  /** memory.stat total_rss: anonymous memory of the pod's processes */
  totalRss: number;
}

/** The memory of the pod cgroup holding a process's container cgroup (cgroup v1). */
export function podCgroupMemory(memoryCgroup: string): CgroupMemory | undefined {
  const m = /^(.*\/pod[^/]+)(\/|$)/.exec(memoryCgroup);
  if (!m) return undefined;
  const dir = join('/sys/fs/cgroup/memory', m[1]!);
  const usage = Number(read(join(dir, 'memory.usage_in_bytes'))?.trim());
  const totalRss = Number(/^total_rss (\d+)$/m.exec(read(join(dir, 'memory.stat')) ?? '')?.[1]);
  return Number.isFinite(usage) && Number.isFinite(totalRss) ? { usage, totalRss } : undefined;
}

/** The 1, 5 and 15 minute load averages of the machine. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = readFileSync('/proc/loadavg', 'utf8').split(' ').map(Number);
  return [a!, b!, c!];
}
