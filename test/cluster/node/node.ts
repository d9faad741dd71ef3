// Host side of the real test node: preflight, bring-up and teardown.
//
// up:   removes what an earlier run left (same name, or whose owner died), creates the network
//       namespace `capsule-<name>` with the node's address on a veth pair (both ends inside it: the
//       host's interfaces, routes and iptables are not touched), starts supervisor.ts in it (nsenter) under a
//       private mount namespace, waits for its ready.json, and forwards a host loopback port to the
//       API server with socat (the only host-side process), writing a kubeconfig for the host.
// down: SIGTERM to the supervisor, then kills whatever is left, by what the node owns: every process
//       in its network namespace, in its cgroups (`/sys/fs/cgroup/<hierarchy>/capsule-<name>`) and the
//       recorded pids; removes those cgroups, the namespace and the state directory. Idempotent, and
//       run again at the next start, so a SIGKILLed run is cleaned up by the next one at the latest;
//       a detached watcher (cli.ts watch) runs it as soon as the owner (the test runner) is gone.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { binariesBuilt, binDir as clusterBinDir } from '../harness.ts';
import { nodeBinDir, nodeImagesDir, nodePaths, net, repoRoot, stateRoot, type NodePaths } from './config.ts';

export interface NodeRecord {
  name: string;
  supervisorPid?: number;
  /** host-side watcher (cli.ts watch): tears the node down when ownerPid dies */
  watcherPid?: number;
  forwarderPid?: number;
  ownerPid?: number;
  hostPort?: number;
  startedAt: string;
}

export interface RealNode {
  name: string;
  /** kubeconfig for the host (server https://127.0.0.1:<port>, forwarded into the node) */
  kubeconfig: string;
  server: string;
  paths: NodePaths;
  /** ms from startNode() until CoreDNS was Ready */
  startupMs: number;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sh = (cmd: string, args: string[]): string => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const quiet = (cmd: string, args: string[]): boolean => {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

const NODE_BINS = ['containerd', 'containerd-shim-runc-v2', 'ctr', 'kubelet', 'kube-proxy', 'kube-router', 'coredns'];

/** Why the real node cannot start here, or undefined when it can. Each reason says what to do. */
export function preflight(): string | undefined {
  if (process.platform !== 'linux') return `the real node needs Linux (network and mount namespaces, cgroups); this is ${process.platform}`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return `the real node needs root (it creates a network namespace, mounts, cgroups and runs containerd/kubelet); uid is ${process.getuid()}`;
  }
  const missingTools = ['ip', 'unshare', 'nsenter', 'socat', 'mount', 'iptables', 'ipset', 'conntrack', '/usr/sbin/runc', '/usr/lib/cni/bridge'].filter((t) =>
    t.startsWith('/') ? !existsSync(t) : !quiet('sh', ['-c', `command -v ${t}`]),
  );
  if (missingTools.length) return `missing on this machine: ${missingTools.join(', ')} (test/cluster/node/build.sh apt installs them)`;
  const missingBins = NODE_BINS.filter((b) => !existsSync(join(nodeBinDir, b)));
  if (missingBins.length) return `node binaries missing in ${nodeBinDir}: ${missingBins.join(', ')} (run test/cluster/node/build.sh)`;
  const missingImages = ['pause.tar', 'busybox.tar', 'coredns.tar'].filter((f) => !existsSync(join(nodeImagesDir, f)));
  if (missingImages.length) return `node images missing in ${nodeImagesDir}: ${missingImages.join(', ')} (run test/cluster/node/build.sh images)`;
  if (!binariesBuilt()) return `control-plane binaries missing in ${clusterBinDir} (run test/cluster/build.sh)`;
  if (!existsSync('/sys/fs/cgroup/pids') && !existsSync('/sys/fs/cgroup/cgroup.controllers')) return 'no cgroup filesystem under /sys/fs/cgroup';
  return diskShortage();
}

/** Room the node needs on top of the kubelet's eviction threshold: the images it imports, pods' layers and logs. */
const NODE_DISK_BYTES = 4 * 1024 ** 3;

/**
 * The node shares the machine's disk, and its kubelet taints itself and evicts pods once the disk
 * is below its threshold (config.ts evictionHard: 1% of the filesystem): the tests then time out
 * waiting for pods that never schedule (seen when other work had filled the disk to 585 MB free).
 * So a start with less than the threshold plus NODE_DISK_BYTES free is refused, saying so.
 */
export function diskShortage(dir = dirname(stateRoot)): string | undefined {
  let st: { bavail: number; blocks: number; bsize: number };
  try {
    st = statfsSync(dir);
  } catch {
    return undefined; // nothing to measure yet: the start itself reports a missing folder
  }
  const free = st.bavail * st.bsize;
  const need = 0.01 * st.blocks * st.bsize + NODE_DISK_BYTES;
  if (free >= need) return undefined;
  const gib = (b: number) => `${(b / 1024 ** 3).toFixed(1)} GiB`;
  return `only ${gib(free)} free on the filesystem of ${dir}; the node needs ${gib(need)} (its kubelet evicts pods below 1% free, plus ${gib(NODE_DISK_BYTES)} for images and pods): free some space first`;
}

function readRecord(p: NodePaths): NodeRecord | undefined {
  try {
    return JSON.parse(readFileSync(p.record, 'utf8')) as NodeRecord;
  } catch {
    return undefined;
  }
}

/** A process that exists and is not a zombie (a killed child nobody reaped yet counts as gone). */
export function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The cgroup directories of a node, one per mounted hierarchy (v1) or the one of the unified tree. */
function cgroupDirs(p: NodePaths): string[] {
  const base = '/sys/fs/cgroup';
  const dirs: string[] = [];
  if (existsSync(join(base, 'cgroup.controllers'))) dirs.push(join(base, p.cgroupRoot));
  else for (const h of readdirSync(base)) dirs.push(join(base, h, p.cgroupRoot));
  return dirs.filter((d) => existsSync(d));
}

function walkCgroups(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walkCgroups(join(dir, e.name), out);
  out.push(dir); // children first: rmdir order
  return out;
}

function nodePids(p: NodePaths, rec: NodeRecord | undefined): number[] {
  const pids = new Set<number>();
  if (existsSync(`/run/netns/${p.netns}`)) {
    try {
      for (const l of sh('ip', ['netns', 'pids', p.netns]).split('\n')) if (l.trim()) pids.add(Number(l));
    } catch {
      /* gone */
    }
  }
  for (const d of cgroupDirs(p)) {
    for (const c of walkCgroups(d)) {
      try {
        for (const l of readFileSync(join(c, 'cgroup.procs'), 'utf8').split('\n')) if (l.trim()) pids.add(Number(l));
      } catch {
        /* gone */
      }
    }
  }
  for (const pid of [rec?.supervisorPid, rec?.forwarderPid, rec?.watcherPid]) if (pid && alive(pid)) pids.add(pid);
  try {
    for (const l of readFileSync(join(p.state, 'supervisor.pids'), 'utf8').split('\n')) if (l.trim() && alive(Number(l))) pids.add(Number(l));
  } catch {
    /* none */
  }
  try {
    for (const l of readFileSync(join(p.controlPlane, 'pids'), 'utf8').split('\n')) if (l.trim() && alive(Number(l))) pids.add(Number(l));
  } catch {
    /* none */
  }
  pids.delete(process.pid);
  return [...pids];
}

/** Tears a node down completely (see the file comment). Idempotent; safe when nothing is left. */
export async function stopNode(name: string, log: (m: string) => void = () => {}): Promise<void> {
  const p = nodePaths(name);
  const rec = readRecord(p);
  const t0 = Date.now();
  if (rec?.supervisorPid && alive(rec.supervisorPid)) {
    process.kill(rec.supervisorPid, 'SIGTERM');
    for (let i = 0; i < 150 && alive(rec.supervisorPid); i++) await sleep(100);
  }
  for (let round = 0; round < 50; round++) {
    const pids = nodePids(p, rec);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sleep(100);
  }
  const left = nodePids(p, rec);
  if (left.length) throw new Error(`node ${name}: processes still alive after teardown: ${left.join(' ')}`);
  for (const d of cgroupDirs(p)) {
    for (const c of walkCgroups(d)) {
      for (let i = 0; i < 20; i++) {
        try {
          rmdirSync(c);
          break;
        } catch {
          await sleep(100);
        }
      }
    }
  }
  // (a concurrent teardown of the same node may have removed it first)
  if (existsSync(`/run/netns/${p.netns}`) && !quiet('ip', ['netns', 'del', p.netns]) && existsSync(`/run/netns/${p.netns}`)) {
    throw new Error(`node ${name}: could not delete network namespace ${p.netns}`);
  }
  // nothing of the node should be mounted in the host's mount namespace; unmount defensively
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n').reverse()) {
    const mp = line.split(' ')[4];
    if (mp && (mp === p.state || mp.startsWith(`${p.state}/`))) quiet('umount', ['-l', mp]);
  }
  // keep the logs of the last run of each node in the project's cache (git-ignored) for diagnosis
  if (existsSync(p.logs)) {
    const keep = join(repoRoot, '.cache', 'node', 'logs', name);
    try {
      rmSync(keep, { recursive: true, force: true });
      mkdirSync(keep, { recursive: true });
      quiet('cp', ['-r', `${p.logs}/.`, keep]);
      quiet('cp', ['-r', join(p.controlPlane, 'logs'), join(keep, 'control-plane')]);
    } catch (e) {
      log(`could not keep the logs in ${keep}: ${(e as Error).message}`);
    }
  }
  rmSync(p.state, { recursive: true, force: true });
  try {
    rmdirSync(stateRoot);
  } catch {
    /* other nodes, or not empty */
  }
  const leftCg = cgroupDirs(p);
  if (leftCg.length) throw new Error(`node ${name}: cgroups left: ${leftCg.join(' ')}`);
  log(`node ${name} down in ${Date.now() - t0} ms`);
}

/** Nodes whose owner process died (a killed test run) or that are half made: torn down. */
export async function cleanupStale(log: (m: string) => void = () => {}): Promise<void> {
  if (!existsSync(stateRoot)) return;
  for (const name of readdirSync(stateRoot)) {
    const p = nodePaths(name);
    const rec = readRecord(p);
    if (!rec || (rec.ownerPid && !alive(rec.ownerPid)) || !alive(rec.supervisorPid)) {
      log(`removing the leftovers of node ${name}`);
      await stopNode(name, log);
    }
  }
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => res(port));
    });
  });
}

export interface StartNodeOptions {
  name?: string;
  /** Extra image archives (docker save / OCI) imported into the node's containerd, e.g. the runtime and operator images. */
  images?: string[];
  /** The node tears itself down when this process dies (default: the calling process; 0 = never, for `node:up`). */
  ownerPid?: number;
  log?: (m: string) => void;
  timeoutMs?: number;
}

export async function startNode(opts: StartNodeOptions = {}): Promise<RealNode> {
  const why = preflight();
  if (why) throw new Error(`the real node cannot start: ${why}`);
  const name = opts.name ?? 'realnode';
  const log = opts.log ?? (() => {});
  const p = nodePaths(name);
  const t0 = Date.now();
  await cleanupStale(log);
  await stopNode(name, log); // same name: always replaced

  mkdirSync(p.logs, { recursive: true });
  const ownerPid = opts.ownerPid ?? process.pid;
  const rec: NodeRecord = { name, ownerPid: ownerPid || undefined, startedAt: new Date().toISOString() };
  const save = () => writeFileSync(p.record, JSON.stringify(rec, null, 2));
  save();
  try {
    // network namespace: the node's address on a veth whose peer stays inside too
    sh('ip', ['netns', 'add', p.netns]);
    const ipn = (...a: string[]) => sh('ip', ['-n', p.netns, ...a]);
    ipn('link', 'set', 'lo', 'up');
    ipn('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-peer');
    ipn('addr', 'add', `${net.nodeIp}/${net.nodePrefix}`, 'dev', 'eth0');
    ipn('link', 'set', 'eth0', 'up');
    ipn('link', 'set', 'eth0-peer', 'up');
    ipn('route', 'add', 'default', 'dev', 'eth0');

    const images = [join(nodeImagesDir, 'pause.tar'), join(nodeImagesDir, 'busybox.tar'), join(nodeImagesDir, 'coredns.tar'), ...(opts.images ?? [])];
    for (const i of images) if (!existsSync(i)) throw new Error(`image archive ${i} does not exist`);
    const logFd = openSync(join(p.logs, 'supervisor.log'), 'a');
    // nsenter, not `ip netns exec`: that remounts /sys for the namespace, hiding the cgroup mounts runc needs
    const sup = spawn(
      'nsenter',
      [
        `--net=/run/netns/${p.netns}`,
        '--',
        'unshare',
        '--mount',
        '--propagation',
        'private',
        '--',
        process.execPath,
        '--import',
        'tsx',
        join(repoRoot, 'test', 'cluster', 'node', 'supervisor.ts'),
        '--name',
        name,
        ...(ownerPid ? ['--watch-pid', String(ownerPid)] : []),
        ...images.flatMap((i) => ['--image', i]),
      ],
      { detached: true, stdio: ['ignore', logFd, logFd], cwd: repoRoot, env: { ...process.env, CLUSTER_BIN_DIR: clusterBinDir } },
    );
    closeSync(logFd);
    sup.unref();
    rec.supervisorPid = sup.pid;
    save();
    // The teardown when the owner dies runs from here, the host's namespaces: the supervisor's
    // mount namespace hides /run/netns, and /proc/1/ns is not open to us on every machine.
    if (ownerPid) {
      const watcher = spawn(
        process.execPath,
        ['--import', 'tsx', join(repoRoot, 'test', 'cluster', 'node', 'cli.ts'), 'watch', '--name', name, '--pid', String(ownerPid)],
        { detached: true, stdio: 'ignore', cwd: repoRoot, env: { ...process.env, CLUSTER_BIN_DIR: clusterBinDir } },
      );
      watcher.unref();
      rec.watcherPid = watcher.pid;
      save();
    }
    log(`supervisor ${sup.pid} started in netns ${p.netns}; log ${join(p.logs, 'supervisor.log')}`);

    const deadline = Date.now() + (opts.timeoutMs ?? 240_000);
    while (!existsSync(p.ready)) {
      if (!alive(sup.pid) || existsSync(join(p.state, 'failed.txt'))) {
        throw new Error(`the real node failed to start; supervisor log ${join(p.logs, 'supervisor.log')}:\n${tailFile(join(p.logs, 'supervisor.log'), 40)}`);
      }
      if (Date.now() > deadline)
        throw new Error(`the real node did not become ready in time; log ${join(p.logs, 'supervisor.log')}:\n${tailFile(join(p.logs, 'supervisor.log'), 40)}`);
      await sleep(200);
    }
    const ready = JSON.parse(readFileSync(p.ready, 'utf8')) as { kubeconfig: string };

    // the API server for host-side clients: 127.0.0.1:<port> -> <node ip>:6443 inside the namespace
    const hostPort = await freePort();
    const fwd = spawn(
      'socat',
      [`TCP-LISTEN:${hostPort},bind=127.0.0.1,fork,reuseaddr`, `EXEC:nsenter --net=/run/netns/${p.netns} socat STDIO TCP\\:${net.nodeIp}\\:${net.apiPort}`],
      { detached: true, stdio: 'ignore' },
    );
    fwd.unref();
    rec.forwarderPid = fwd.pid;
    rec.hostPort = hostPort;
    save();
    const server = `https://127.0.0.1:${hostPort}`;
    const kubeconfig = join(p.state, 'kubeconfig');
    writeFileSync(kubeconfig, readFileSync(ready.kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: ${server}`), { mode: 0o600 });
    for (let i = 0; ; i++) {
      if (quiet(join(clusterBinDir, 'kubectl'), [`--kubeconfig=${kubeconfig}`, 'get', '--raw=/readyz'])) break;
      if (i > 100) throw new Error(`the API server is not reachable through the forwarder at ${server}`);
      await sleep(100);
    }
    const startupMs = Date.now() - t0;
    log(`node ${name} ready in ${startupMs} ms; KUBECONFIG=${kubeconfig}`);
    return { name, kubeconfig, server, paths: p, startupMs, stop: () => stopNode(name, log) };
  } catch (e) {
    await stopNode(name, log).catch((e2) => log(`teardown after failure: ${(e2 as Error).message}`));
    throw e;
  }
}

function tailFile(path: string, n: number): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

/** True when a node of this name is up (its supervisor alive and ready.json written). */
export function nodeRunning(name = 'realnode'): boolean {
  const p = nodePaths(name);
  const rec = readRecord(p);
  return !!rec && alive(rec.supervisorPid) && existsSync(p.ready) && statSync(p.ready).isFile();
}
