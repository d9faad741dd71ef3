/**
 * CPU cgroups for a bench's background load, laid out as a Kubernetes node lays out pods: kubelet
 * gives every pod a cgroup of its own, and the kernel shares the cores between those groups by
 * weight before it shares a group's part between the group's threads. A serving runtime beside a
 * busy neighbour pod therefore competes with that pod as one group against another, not thread
 * against thread as it does with processes in its own cgroup (cpu-load.ts's default: the harsher
 * case, a pod's own containers or a bare machine). Each group made here has the default weight
 * (cgroup v1 `cpu.shares` 1024, v2 `cpu.weight` 100): equal pods, equal requests.
 *
 * Both hierarchies are handled: v1 with the cpu controller mounted at <root>/cpu (this project's
 * machines and their kubelet), v2 with `cpu` among <root>/cgroup.controllers (switched on for the
 * root's children through cgroup.subtree_control). Making groups needs root; anything missing is
 * an error naming what to set up, never a silent run without the groups.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A cgroup hierarchy with the cpu controller: where groups are made, and its version. */
export interface CpuHierarchy {
  version: 1 | 2;
  /** The folder new groups go under (the cpu controller's root). */
  root: string;
}

/** One group of the hierarchy. */
export interface CpuGroup {
  readonly dir: string;
  /** Moves each process (all its threads) into the group; a process gone meanwhile is skipped. */
  add(pids: readonly number[]): void;
  /** Moves whatever is still inside back to the root and deletes the group. */
  remove(): void;
}

/** Finds the cpu controller under `fsRoot`; throws naming what is missing. */
export function cpuHierarchy(fsRoot = '/sys/fs/cgroup'): CpuHierarchy {
  for (const name of ['cpu', 'cpu,cpuacct']) {
    const root = join(fsRoot, name);
    if (existsSync(join(root, 'cgroup.procs')) && existsSync(join(root, 'cpu.shares'))) return { version: 1, root };
  }
  const controllers = join(fsRoot, 'cgroup.controllers');
  if (existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('cpu')) return { version: 2, root: fsRoot };
  throw new Error(
    `--load-as pods needs the cpu cgroup controller: neither ${join(fsRoot, 'cpu')}/cpu.shares (cgroup v1) nor 'cpu' in ${controllers} (cgroup v2) is there; mount it, or run the load as processes (--load-as processes)`,
  );
}

/** Makes group `name` under the hierarchy's root (root needed); throws naming the folder when it cannot. */
export function cpuGroup(h: CpuHierarchy, name: string): CpuGroup {
  const dir = join(h.root, name);
  try {
    if (h.version === 2) {
      const control = join(h.root, 'cgroup.subtree_control');
      if (!readFileSync(control, 'utf8').split(/\s+/).includes('cpu')) writeFileSync(control, '+cpu');
    }
    mkdirSync(dir);
  } catch (e) {
    throw new Error(`--load-as pods: cannot make the cgroup ${dir} (${(e as Error).message}); it needs root`);
  }
  const procs = join(dir, 'cgroup.procs');
  const move = (to: string, pid: number): void => {
    try {
      writeFileSync(to, String(pid));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  };
  /** The processes in the group now. */
  const pids = (): number[] => readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number);
  return {
    dir,
    add(list) {
      for (const pid of list) move(procs, pid);
    },
    remove() {
      if (!existsSync(dir)) return;
      for (const pid of pids()) move(join(h.root, 'cgroup.procs'), pid);
      rmdirSync(dir);
    },
  };
}

/** The cgroup `pid` is in under the cpu controller ('/' for the root), from /proc/<pid>/cgroup: v1's cpu line, else v2's. */
export function cpuGroupOf(pid: number): string | undefined {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 3);
  const v1 = lines.find((f) => f[1]!.split(',').includes('cpu'));
  return (v1 ?? lines.find((f) => f[0] === '0' && f[1] === ''))?.slice(2).join(':');
}
