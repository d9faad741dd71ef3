// The real node's supervisor: runs INSIDE the node's network namespace and a private mount
// namespace (node.ts starts it there with `nsenter --net … unshare --mount`), starts the control
// plane (the test harness, serving the node), containerd, kubelet, kube-proxy, kube-router and the
// CoreDNS pod, writes ready.json, and stops them all on SIGTERM, or when the process it watches
// (--watch-pid, the test runner) is gone; the host-side watcher (cli.ts watch) then removes the rest.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterBinaries, startCluster, type Cluster } from '../harness.ts';
import { containerdConfig, cniConfig, corednsManifest, kubeletConfig, kubeletSysctls, kubeProxyConfig, net, nodeBinDir, nodePaths } from './config.ts';

const { values } = parseArgs({
  options: {
    name: { type: 'string' },
    'watch-pid': { type: 'string' },
    image: { type: 'string', multiple: true, default: [] },
  },
});
const p = nodePaths(values.name ?? 'realnode');
const t0 = Date.now();
const log = (m: string) => process.stderr.write(`[supervisor ${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bin = (b: string) => join(nodeBinDir, b);

interface Proc {
  name: string;
  child: ChildProcess;
  exited: boolean;
  log: string;
}
const procs: Proc[] = [];
const pidsFile = join(p.state, 'supervisor.pids');

function launch(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Proc {
  const logPath = join(p.logs, `${name}.log`);
  const fd = openSync(logPath, 'a');
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd], env, cwd: p.state });
  closeSync(fd);
  const proc: Proc = { name, child, exited: false, log: logPath };
  child.on('exit', (code, sig) => {
    proc.exited = true;
    if (!stopping) log(`${name} exited (${sig ?? code}); log ${logPath}`);
  });
  child.on('error', (e) => log(`${name}: ${e.message}`));
  if (child.pid) appendFileSync(pidsFile, `${child.pid}\n`);
  procs.push(proc);
  return proc;
}

function tail(path: string, n = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, watch: Proc[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    for (const w of watch) if (w.exited) throw new Error(`${w.name} exited while waiting for ${what}; log ${w.log}:\n${tail(w.log)}`);
    try {
      if (await check()) return;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? ` (last: ${last})` : ''}\n${watch.map((w) => `--- ${w.name}:\n${tail(w.log, 15)}`).join('\n')}`);
    await sleep(250);
  }
}

const kubectl = (kubeconfig: string, args: string[], input?: string): string =>
  execFileSync(clusterBinaries().kubectl, [`--kubeconfig=${kubeconfig}`, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });

/** Mounts private to the node: the sysctls the kubelet would otherwise set machine-wide, and a
 *  tmpfs over /run and /var/log (containerd's shim sockets in /run/containerd, the xtables lock of
 *  the node's own iptables, kubelet's /var/log/containers links). */
function privateMounts(): void {
  const sys = join(p.etc, 'sysctl');
  mkdirSync(sys, { recursive: true });
  for (const [key, value] of Object.entries(kubeletSysctls)) {
    const f = join(sys, key.replace(/\//g, '.'));
    writeFileSync(f, `${value}\n`);
    execFileSync('mount', ['--bind', f, `/proc/sys/${key}`]);
  }
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'mode=755', 'capsule-node-run', '/run']);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'mode=755', 'capsule-node-log', '/var/log']);
  writeFileSync(
    join(p.etc, 'resolv.conf'),
    `# the node has no upstream DNS (no way out of its network namespace)\nnameserver 127.0.0.1\noptions ndots:1 timeout:1 attempts:1\n`,
  );
}

function createCgroupRoot(): void {
  const base = '/sys/fs/cgroup';
  if (existsSync(join(base, 'cgroup.controllers'))) {
    mkdirSync(join(base, p.cgroupRoot), { recursive: true });
    return;
  }
  for (const h of readdirSync(base)) {
    const dir = join(base, h, p.cgroupRoot);
    if (!existsSync(join(base, h, 'cgroup.procs'))) continue;
    mkdirSync(dir, { recursive: true });
    if (existsSync(join(dir, 'cpuset.cpus'))) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(dir, f), readFileSync(join(base, h, f), 'utf8'));
    }
  }
}

let cluster: Cluster | undefined;
let stopping = false;

async function stopAll(): Promise<void> {
  if (stopping) return;
  stopping = true;
  log('stopping');
  const order = ['kube-router', 'kube-proxy', 'kubelet', 'containerd'];
  for (const name of order) {
    const pr = procs.find((x) => x.name === name);
    if (!pr || pr.exited || !pr.child.pid) continue;
    try {
      process.kill(-pr.child.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
    for (let i = 0; i < 40 && !pr.exited; i++) await sleep(100);
    try {
      process.kill(-pr.child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await cluster?.stop();
}

async function main(): Promise<void> {
  for (const d of [p.logs, p.containerd, p.kubelet, join(p.cni, 'net.d'), p.etc]) mkdirSync(d, { recursive: true });
  privateMounts();

  // 1. control plane, serving the node's address
  cluster = await startCluster({
    dir: p.controlPlane,
    withKwok: false,
    node: { advertiseAddress: net.nodeIp, securePort: net.apiPort, clusterCidr: net.podCidr },
    log: (m) => log(`control plane: ${m}`),
  });
  const kubeconfig = cluster.kubeconfigPath;
  const ca = join(cluster.dir, 'certs', 'ca.crt');
  log(`control plane up in ${cluster.startupMs} ms`);

  // 2. containerd (its shim from the same build must be first on PATH)
  writeFileSync(join(p.containerd, 'config.toml'), containerdConfig(p));
  writeFileSync(join(p.cni, 'net.d', '10-capsule-node.conflist'), cniConfig(p, '10.244.0.0/24'));
  const env = { ...process.env, PATH: `${nodeBinDir}:/usr/sbin:/usr/bin:/sbin:/bin` };
  const containerd = launch('containerd', bin('containerd'), ['--config', join(p.containerd, 'config.toml'), '--log-level', 'warn'], env);
  await waitFor('containerd socket', () => existsSync(p.containerdSock), [containerd]);
  await waitFor('containerd serving', () => {
    execFileSync(bin('ctr'), ['-a', p.containerdSock, 'version'], { stdio: 'ignore' });
    return true;
  }, [containerd]);
  const tImages = Date.now();
  for (const tar of values.image ?? []) {
    execFileSync(bin('ctr'), ['-a', p.containerdSock, '-n', 'k8s.io', 'images', 'import', '--no-unpack=false', tar], { stdio: ['ignore', 'ignore', 'pipe'] });
  }
  log(`containerd up; ${values.image?.length ?? 0} images imported in ${Date.now() - tImages} ms`);

  // 3. kubelet, under its own cgroup root (the kubelet wants it to exist in every hierarchy;
  // a v1 cpuset needs cpus/mems before anything can join it)
  createCgroupRoot();
  writeFileSync(join(p.kubelet, 'config.yaml'), kubeletConfig(p, ca));
  const kubelet = launch(
    'kubelet',
    bin('kubelet'),
    [
      `--config=${join(p.kubelet, 'config.yaml')}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${join(p.kubelet, 'root')}`,
      `--cert-dir=${join(p.kubelet, 'pki')}`,
      `--hostname-override=${p.name}`,
      `--node-ip=${net.nodeIp}`,
      '--v=1',
    ],
    env,
  );
  const watch = [containerd, kubelet];
  await waitFor(
    `node ${p.name} Ready`,
    () => {
      const n = JSON.parse(kubectl(kubeconfig, ['get', 'node', p.name, '-o', 'json']));
      return (n.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') && !!n.spec?.podCIDR;
    },
    watch,
  );
  log('node Ready');

  // 4. Services (kube-proxy, iptables mode) and NetworkPolicies (kube-router, firewall only)
  writeFileSync(join(p.state, 'kube-proxy.yaml'), kubeProxyConfig(p, kubeconfig));
  const proxy = launch('kube-proxy', bin('kube-proxy'), [`--config=${join(p.state, 'kube-proxy.yaml')}`, '--v=1'], env);
  const router = launch(
    'kube-router',
    bin('kube-router'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--hostname-override=${p.name}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      '--enable-cni=false',
      '--metrics-port=0',
      '--health-port=20244',
      '-v=1',
    ],
    env,
  );
  watch.push(proxy, router);

  // 5. cluster DNS as a pod
  kubectl(kubeconfig, ['apply', '-f', '-'], corednsManifest());
  await waitFor(
    'CoreDNS Ready',
    () => {
      const out = kubectl(kubeconfig, [
        '-n',
        'kube-system',
        'get',
        'pods',
        '-l',
        'k8s-app=kube-dns',
        '-o',
        'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}',
      ]);
      return out.trim() === 'True';
    },
    watch,
  );
  log('CoreDNS Ready');

  writeFileSync(p.ready, JSON.stringify({ kubeconfig, server: cluster.server, startupMs: Date.now() - t0, controlPlaneMs: cluster.startupMs }, null, 2));
  log(`node ready in ${Date.now() - t0} ms`);

  // stay up: watch the processes and the parent
  const watchPid = values['watch-pid'] ? Number(values['watch-pid']) : undefined;
  for (;;) {
    await sleep(500);
    const dead = watch.find((w) => w.exited);
    if (dead) log(`${dead.name} died: ${tail(dead.log, 10)}`);
    if (watchPid !== undefined && !existsSync(`/proc/${watchPid}`)) {
      // the host-side watcher (cli.ts watch) tears everything down; stop our part meanwhile
      log(`watched process ${watchPid} is gone: stopping`);
      await stopAll();
      process.exit(0);
    }
  }
}

for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.on(sig, () => {
    void stopAll().finally(() => process.exit(0));
  });
}
main().catch(async (e) => {
  log(`FAILED: ${(e as Error).stack ?? e}`);
  writeFileSync(join(p.state, 'failed.txt'), String((e as Error).message ?? e));
  await stopAll();
  process.exit(1);
});
