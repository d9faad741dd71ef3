/**
 * The memory figures of bench/density.ts, from the host (density-host.ts): what each awake density
 * Capsule costs the node (its `mur serve` process's PSS, its pod cgroup's usage and RSS), and the
 * RSS of the operator's and the activator's processes.
 */
import { NS } from './density-objects.ts';
import type { Kubectl } from './density-kube.ts';
import { nodeProcesses, podCgroupMemory, pssBytes, rssBytes, type NodeProcess } from './density-host.ts';

export interface AwakeMemory {
  capsule: string;
  pod: string;
  /** PSS of the pod's `mur serve` process(es), summed */
  pssBytes?: number;
  /** the pod cgroup's memory.usage_in_bytes (page cache included) */
  cgroupUsageBytes?: number;
  /** the pod cgroup's memory.stat total_rss */
  cgroupRssBytes?: number;
}

export interface ProcessRss {
  operator?: number;
  activator?: number;
}

/** `mur serve` as the runtime image runs it: node … /app/bin/mur serve … */
const isMurServe = (p: NodeProcess): boolean => {
  const i = p.argv.findIndex((a) => a.endsWith('/bin/mur'));
  return i >= 0 && p.argv[i + 1] === 'serve';
};

/** The memory of every pod of `capsules` (they are awake: each has its one pod), read now. */
export async function measureAwake(k: Kubectl, cgroupRoot: string, capsules: string[]): Promise<AwakeMemory[]> {
  const wanted = new Set(capsules);
  // biome-ignore lint/suspicious/noExplicitAny: pods as the API server sent them
  const pods = (JSON.parse(await k(['-n', NS, 'get', 'pods', '-l', 'murmur.io/capsule', '-o', 'json'])).items as any[]).filter((p) =>
    wanted.has(p.metadata.labels['murmur.io/capsule']),
  );
  const procs = nodeProcesses(cgroupRoot);
  return pods.map((p) => {
    const mine = procs.filter((x) => x.podUid === p.metadata.uid);
    const serve = mine.filter(isMurServe);
    const pss = serve.map((x) => pssBytes(x.pid)).filter((b): b is number => b !== undefined);
    const cg = mine[0] ? podCgroupMemory(mine[0].memoryCgroup) : undefined;
    return {
      capsule: p.metadata.labels['murmur.io/capsule'],
      pod: p.metadata.name,
      pssBytes: pss.length ? pss.reduce((a, b) => a + b, 0) : undefined,
      cgroupUsageBytes: cg?.usage,
      cgroupRssBytes: cg?.totalRss,
    };
  });
}

/** The RSS of the operator's and the activator's node processes (the image's entrypoints), summed over replicas. */
export function processRss(cgroupRoot: string): ProcessRss {
  const sum = (suffix: string): number | undefined => {
    const rss = nodeProcesses(cgroupRoot)
      .filter((p) => p.argv.some((a) => a.endsWith(suffix)))
      .map((p) => rssBytes(p.pid))
      .filter((b): b is number => b !== undefined);
    return rss.length ? rss.reduce((a, b) => a + b, 0) : undefined;
  };
  return { operator: sum('/dist/operator/main.js'), activator: sum('/dist/operator/activator/main.js') };
}
