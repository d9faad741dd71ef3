// A real, throw-away Kubernetes control plane for tests, without Docker.
//
// etcd + kube-apiserver (+ kube-controller-manager, kube-scheduler and kwok with one simulated node)
// run as ordinary child processes on free 127.0.0.1 ports, from binaries that test/cluster/build.sh
// compiles from the Go module proxy into .cache/cluster/bin. Certificates come from the openssl CLI,
// key pairs from node:crypto. Every child runs in its own process group; stop() kills the groups,
// exit/signal handlers kill them if the test process ends, and a small detached reaper process
// kills them (and removes the temp dir) even if the test process is SIGKILLed.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (two levels above this file). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Where build.sh puts the binaries (override with CLUSTER_BIN_DIR, for both build.sh and the harness). */
export const binDir = process.env.CLUSTER_BIN_DIR ?? join(repoRoot, '.cache', 'cluster', 'bin');
/** The idempotent build script. */
export const buildScript = join(repoRoot, 'test', 'cluster', 'build.sh');

export interface ClusterBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  helm: string;
  kwok: string;
  /** kwok Stage objects (upstream defaults) written by build.sh next to the binaries. */
  kwokStages: string;
}

/** Absolute paths of the binaries in binDir (they may not exist yet: see binariesBuilt / ensureBinaries). */
export function clusterBinaries(dir: string = binDir): ClusterBinaries {
  return {
    etcd: join(dir, 'etcd'),
    kubeApiserver: join(dir, 'kube-apiserver'),
    kubeControllerManager: join(dir, 'kube-controller-manager'),
    kubeScheduler: join(dir, 'kube-scheduler'),
    kubectl: join(dir, 'kubectl'),
    helm: join(dir, 'helm'),
    kwok: join(dir, 'kwok'),
    kwokStages: join(dir, 'kwok-stages.yaml'),
  };
}

/** kubectl for tests: the one built into binDir, else `kubectl` from PATH (e.g. with an external KUBECONFIG). */
export function kubectlPath(): string {
  const p = clusterBinaries().kubectl;
  return existsSync(p) ? p : 'kubectl';
}

/** helm (v4) for tests: the one built into binDir, else `helm` from PATH. */
export function helmPath(): string {
  const p = clusterBinaries().helm;
  return existsSync(p) ? p : 'helm';
}

/** True when the control-plane binaries needed by startCluster() exist (kwok is optional). */
export function binariesBuilt(dir: string = binDir): boolean {
  const b = clusterBinaries(dir);
  return [b.etcd, b.kubeApiserver, b.kubeControllerManager, b.kubeScheduler, b.kubectl].every((p) => existsSync(p));
}

/**
 * Runs test/cluster/build.sh (a no-op taking milliseconds when the stamp matches). Build progress goes
 * to this process's stderr. Rejects with a clear message when Go is missing or the build fails.
 */
export async function ensureBinaries(): Promise<void> {
  const code = await new Promise<number>((res, rej) => {
    const child = spawn('bash', [buildScript], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, CLUSTER_BIN_DIR: binDir } });
    child.on('error', rej);
    child.on('exit', (c, sig) => res(c ?? (sig ? 128 : 1)));
  });
  if (code === 2) {
    throw new Error(
      'test/cluster/build.sh: Go is not installed. The operator tests need a Kubernetes API server: install Go >= 1.26 ' +
        '(the binaries are built from the Go module proxy into .cache/cluster/bin), or set KUBECONFIG to an existing cluster.',
    );
  }
  if (code !== 0) throw new Error(`test/cluster/build.sh failed with exit code ${code} (see its output above)`);
}

export interface StartClusterOptions {
  /** Working directory for certs, etcd data, kubeconfig and logs. Default: a new temp dir, removed by stop().
   *  A directory given here is kept by stop() (its logs stay readable). */
  dir?: string;
  /** Run kube-controller-manager (garbage collection, namespace deletion, Deployments -> ReplicaSets -> Pods, SAs). Default true. */
  withControllerManager?: boolean;
  /** Run kube-scheduler. Default true. */
  withScheduler?: boolean;
  /** Run kwok with one simulated node, so scheduled pods become Running/Ready. Default true; silently off when kwok was not built. */
  withKwok?: boolean;
  /** Overall start-up timeout. Default 120 s. */
  timeoutMs?: number;
  /** Progress messages (default: none). */
  log?: (msg: string) => void;
  /** Serve a real node (test/cluster/node/): the API server binds all addresses of its network
   *  namespace and advertises `advertiseAddress` on `securePort`, with the endpoint reconciler (the
   *  `kubernetes` Service gets endpoints) and ServiceAccount admission (pods get tokens) on, calls
   *  kubelets by InternalIP with the admin client certificate; the controller-manager allocates node
   *  pod CIDRs from `clusterCidr`. Default: loopback only, as envtest. */
  node?: { advertiseAddress: string; securePort: number; clusterCidr: string };
}

export interface Cluster {
  /** Admin kubeconfig (client certificate in group system:masters), data embedded. */
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  binDir: string;
  /** Working directory (certs/, etcd/, logs/, kubeconfig). */
  dir: string;
  /** Which components are running. */
  features: { controllerManager: boolean; scheduler: boolean; kwok: boolean };
  /** Name of the simulated kwok node, when kwok runs. */
  nodeName?: string;
  /** Milliseconds from startCluster() until everything was ready. */
  startupMs: number;
  /** Kills every process this cluster started (process groups) and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// process bookkeeping

interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  logPath: string;
  exited: Promise<void>;
  exitInfo?: string;
}

const liveGroups = new Set<number>();
let handlersInstalled = false;

function killGroupSync(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', () => {
    for (const pid of liveGroups) killGroupSync(pid, 'SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      for (const pid of liveGroups) killGroupSync(pid, 'SIGKILL');
      liveGroups.clear();
      process.off(sig, onSignal);
      // Keep the default behaviour (terminate) unless someone else handles this signal.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

const REAPER = `
const fs = require('fs');
const [ppid, pidsFile, dir, removeDir] = process.argv.slice(1);
const reap = () => {
  let pids = [];
  try { pids = fs.readFileSync(pidsFile, 'utf8').split(/\\s+/).filter(Boolean).map(Number); } catch {}
  for (const p of pids) { try { process.kill(-p, 'SIGKILL'); } catch {} }
  if (removeDir === '1') { try { fs.rmSync(dir, { recursive: true, force: true }); } catch {} }
  process.exit(0);
};
process.on('SIGTERM', () => process.exit(0));
setInterval(() => { try { process.kill(Number(ppid), 0); } catch { reap(); } }, 500);
`;

function startReaper(pidsFile: string, dir: string, removeDir: boolean): ChildProcess {
  const child = spawn(process.execPath, ['-e', REAPER, String(process.pid), pidsFile, dir, removeDir ? '1' : '0'], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  return child;
}

function tail(path: string, lines = 40): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------------
// small helpers

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((res, rej) => {
          const s = createServer();
          s.on('error', rej);
          s.listen(0, '127.0.0.1', () => res(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((res) => s.close(res))));
  return ports;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface TlsAuth {
  ca?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
}

function request(url: string, auth: TlsAuth, method = 'GET', body?: unknown): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const data = body === undefined ? undefined : JSON.stringify(body);
    const opts: https.RequestOptions = {
      method,
      hostname: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      agent: false,
      timeout: 5000,
      headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {},
    };
    const onRes = (r: http.IncomingMessage) => {
      let b = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (b += c));
      r.on('end', () => res({ status: r.statusCode ?? 0, body: b }));
    };
    const req =
      u.protocol === 'https:'
        ? https.request({ ...opts, ca: auth.ca, cert: auth.cert, key: auth.key, rejectUnauthorized: !auth.insecure }, onRes)
        : http.request(opts, onRes);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    if (data) req.write(data);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------------
// certificates

const OPENSSL_CNF = `
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1@EXTRA_SANS@
[v3_client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
`;

interface Certs {
  caCrt: string;
  caKey: string;
  serverCrt: string;
  serverKey: string;
  adminCrt: string;
  adminKey: string;
  saKey: string;
  saPub: string;
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT') throw new Error('the test cluster needs the openssl CLI to create its certificates (apt-get install openssl)');
    throw new Error(`openssl ${args.join(' ')} failed: ${err.stderr?.toString() ?? err.message}`);
  }
}

function makeCerts(dir: string, extraIps: string[] = []): Certs {
  mkdirSync(dir, { recursive: true });
  const p = (f: string) => join(dir, f);
  const ecKey = (file: string) =>
    writeFileSync(p(file), generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, {
      mode: 0o600,
    });
  writeFileSync(p('openssl.cnf'), OPENSSL_CNF.replace('@EXTRA_SANS@', extraIps.map((ip) => `,IP:${ip}`).join('')));
  const serial = () => `0x${randomBytes(8).toString('hex')}`;

  ecKey('ca.key');
  openssl([
    'req',
    '-x509',
    '-new',
    '-config',
    p('openssl.cnf'),
    '-extensions',
    'v3_ca',
    '-key',
    p('ca.key'),
    '-sha256',
    '-days',
    '30',
    '-subj',
    '/O=capsule-operator-tests/CN=capsule-test-ca',
    '-set_serial',
    serial(),
    '-out',
    p('ca.crt'),
  ]);
  const leaf = (name: string, subj: string, ext: string) => {
    ecKey(`${name}.key`);
    openssl(['req', '-new', '-config', p('openssl.cnf'), '-key', p(`${name}.key`), '-subj', subj, '-out', p(`${name}.csr`)]);
    openssl([
      'x509',
      '-req',
      '-in',
      p(`${name}.csr`),
      '-CA',
      p('ca.crt'),
      '-CAkey',
      p('ca.key'),
      '-set_serial',
      serial(),
      '-days',
      '30',
      '-sha256',
      '-extfile',
      p('openssl.cnf'),
      '-extensions',
      ext,
      '-out',
      p(`${name}.crt`),
    ]);
  };
  leaf('apiserver', '/CN=kube-apiserver', 'v3_server');
  leaf('admin', '/O=system:masters/CN=admin', 'v3_client');

  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(p('sa.key'), sa.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string, { mode: 0o600 });
  writeFileSync(p('sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }) as string);

  return {
    caCrt: p('ca.crt'),
    caKey: p('ca.key'),
    serverCrt: p('apiserver.crt'),
    serverKey: p('apiserver.key'),
    adminCrt: p('admin.crt'),
    adminKey: p('admin.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
  };
}

function kubeconfigYaml(server: string, certs: Certs): string {
  const b64 = (f: string) => readFileSync(f).toString('base64');
  return `apiVersion: v1
kind: Config
clusters:
- name: capsule-test
  cluster:
    server: ${server}
    certificate-authority-data: ${b64(certs.caCrt)}
users:
- name: admin
  user:
    client-certificate-data: ${b64(certs.adminCrt)}
    client-key-data: ${b64(certs.adminKey)}
contexts:
- name: capsule-test
  context:
    cluster: capsule-test
    user: admin
current-context: capsule-test
`;
}

// ---------------------------------------------------------------------------------------------------

/** Starts a control plane. See StartClusterOptions for what runs. */
export async function startCluster(opts: StartClusterOptions = {}): Promise<Cluster> {
  // Free ports are picked by binding to :0 and releasing them; if another process grabs one before
  // our component binds it, start once more with fresh ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      if (attempt >= 3 || !/address already in use/i.test((e as Error).message)) throw e;
      opts.log?.(`port clash, retrying (${(e as Error).message.split('\n')[0]})`);
    }
  }
}

async function startOnce(opts: StartClusterOptions): Promise<Cluster> {
  const t0 = Date.now();
  const log = opts.log ?? (() => {});
  const bins = clusterBinaries();
  if (!binariesBuilt()) {
    throw new Error(`cluster binaries missing in ${binDir}: run test/cluster/build.sh (or ensureBinaries()) first`);
  }
  const withKcm = opts.withControllerManager ?? true;
  const withScheduler = opts.withScheduler ?? true;
  const withKwok = (opts.withKwok ?? true) && existsSync(bins.kwok) && existsSync(bins.kwokStages);
  const deadline = t0 + (opts.timeoutMs ?? 120_000);

  const ownDir = !opts.dir;
  const dir = opts.dir ? resolve(opts.dir) : mkdtempSync(join(tmpdir(), 'capsule-cluster-'));
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const pidsFile = join(dir, 'pids');
  writeFileSync(pidsFile, '');

  installExitHandlers();
  const reaper = startReaper(pidsFile, dir, ownDir);
  const procs: Proc[] = [];
  let stopped = false;

  const launch = (name: string, bin: string, args: string[]): Proc => {
    const logPath = join(dir, 'logs', `${name}.log`);
    const fd = openSync(logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd], cwd: dir });
    } finally {
      closeSync(fd);
    }
    if (child.pid === undefined) throw new Error(`could not start ${name} (${bin})`);
    const pid = child.pid;
    liveGroups.add(pid);
    appendFileSync(pidsFile, `${pid}\n`);
    const proc: Proc = {
      name,
      child,
      pid,
      logPath,
      exited: new Promise<void>((res) => {
        child.on('exit', (code, sig) => {
          proc.exitInfo = sig ? `signal ${sig}` : `exit code ${code}`;
          liveGroups.delete(pid);
          killGroupSync(pid, 'SIGKILL'); // anything the leader left behind in its group
          res();
        });
      }),
    };
    child.on('error', () => {});
    procs.push(proc);
    return proc;
  };

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    const running = procs.filter((p) => p.exitInfo === undefined);
    for (const p of running) killGroupSync(p.pid, 'SIGTERM');
    const all = Promise.all(running.map((p) => p.exited));
    const timedOut = await Promise.race([all.then(() => false), sleep(3000).then(() => true)]);
    if (timedOut) {
      for (const p of running) killGroupSync(p.pid, 'SIGKILL');
      await Promise.race([all, sleep(2000)]);
    }
    for (const p of procs) liveGroups.delete(p.pid);
    try {
      reaper.kill('SIGTERM');
    } catch {
      /* gone */
    }
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  };

  /** Polls check() until it returns true; fails fast if one of the started processes died. */
  const waitFor = async (what: string, check: () => Promise<boolean>, watch: Proc[]): Promise<void> => {
    let lastErr = '';
    for (;;) {
      for (const p of watch) {
        if (p.exitInfo !== undefined) throw new Error(`${p.name} exited (${p.exitInfo}) while waiting for ${what}; log ${p.logPath}:\n${tail(p.logPath)}`);
      }
      try {
        if (await check()) return;
      } catch (e) {
        lastErr = (e as Error).message;
      }
      if (Date.now() > deadline) {
        const logs = watch.map((p) => `--- ${p.name} (${p.logPath}):\n${tail(p.logPath, 25)}`).join('\n');
        throw new Error(`timed out waiting for ${what}${lastErr ? ` (last error: ${lastErr})` : ''}\n${logs}`);
      }
      await sleep(200);
    }
  };

  try {
    const [etcdPort, etcdPeerPort, freeApiPort, kcmPort, schedPort, kwokPort] = (await freePorts(6)) as [number, number, number, number, number, number];
    const realNode = opts.node;
    const apiPort = realNode?.securePort ?? freeApiPort;
    const certs = makeCerts(join(dir, 'certs'), realNode ? [realNode.advertiseAddress] : []);
    const server = `https://127.0.0.1:${apiPort}`;
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(server, certs), { mode: 0o600 });
    const admin: TlsAuth = { ca: readFileSync(certs.caCrt, 'utf8'), cert: readFileSync(certs.adminCrt, 'utf8'), key: readFileSync(certs.adminKey, 'utf8') };
    log(`certificates ready in ${Date.now() - t0} ms (${dir})`);

    // etcd (always a fresh data dir: the cluster is throw-away, also in a caller-supplied dir)
    rmSync(join(dir, 'etcd'), { recursive: true, force: true });
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcd = launch('etcd', bins.etcd, [
      '--name=capsule-test',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=capsule-test=${peerUrl}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    await waitFor('etcd /health', async () => {
      const r = await request(`${etcdUrl}/health`, {});
      return r.status === 200 && r.body.includes('"health":"true"');
    }, [etcd]);
    log(`etcd ready at ${etcdUrl} after ${Date.now() - t0} ms`);

    // kube-apiserver
    const network = realNode
      ? [
          '--bind-address=0.0.0.0',
          `--advertise-address=${realNode.advertiseAddress}`,
          // the kubelet registers its InternalIP; its hostname is not resolvable in the node's netns
          '--kubelet-preferred-address-types=InternalIP',
          `--kubelet-client-certificate=${certs.adminCrt}`,
          `--kubelet-client-key=${certs.adminKey}`,
        ]
      : [
          '--bind-address=127.0.0.1',
          // A loopback advertise address is only valid without the endpoint reconciler (which would write
          // it into the `kubernetes` Endpoints). This keeps start-up independent of the host's network.
          '--advertise-address=127.0.0.1',
          '--endpoint-reconciler-type=none',
        ];
    const apiserver = launch('kube-apiserver', bins.kubeApiserver, [
      `--etcd-servers=${etcdUrl}`,
      `--secure-port=${apiPort}`,
      ...network,
      `--cert-dir=${join(dir, 'certs')}`,
      `--tls-cert-file=${certs.serverCrt}`,
      `--tls-private-key-file=${certs.serverKey}`,
      `--client-ca-file=${certs.caCrt}`,
      `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
      `--service-account-key-file=${certs.saPub}`,
      `--service-account-signing-key-file=${certs.saKey}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--authorization-mode=RBAC',
      // As in envtest: with no kubelet there are no SA token volumes to mount, and pods should not wait
      // for the default ServiceAccount to appear. A real node mounts them, as any cluster does.
      ...(realNode ? [] : ['--disable-admission-plugins=ServiceAccount']),
      '--allow-privileged=true',
      '--profiling=false',
    ]);
    await waitFor('kube-apiserver /readyz', async () => (await request(`${server}/readyz`, admin)).status === 200, [etcd, apiserver]);
    await waitFor('namespace default', async () => (await request(`${server}/api/v1/namespaces/default`, admin)).status === 200, [etcd, apiserver]);
    log(`kube-apiserver ready at ${server} after ${Date.now() - t0} ms`);

    const core = [etcd, apiserver];
    const started: Proc[] = [];
    if (withKcm) {
      started.push(
        launch('kube-controller-manager', bins.kubeControllerManager, [
          `--kubeconfig=${kubeconfigPath}`,
          `--authentication-kubeconfig=${kubeconfigPath}`,
          `--authorization-kubeconfig=${kubeconfigPath}`,
          '--authentication-skip-lookup=true',
          '--bind-address=127.0.0.1',
          `--secure-port=${kcmPort}`,
          `--cert-dir=${join(dir, 'certs', 'kcm')}`,
          '--leader-elect=false',
          '--use-service-account-credentials=false',
          `--service-account-private-key-file=${certs.saKey}`,
          `--root-ca-file=${certs.caCrt}`,
          `--cluster-signing-cert-file=${certs.caCrt}`,
          `--cluster-signing-key-file=${certs.caKey}`,
          '--cluster-name=capsule-test',
          '--kube-api-qps=200',
          '--kube-api-burst=400',
          '--profiling=false',
          ...(realNode ? ['--allocate-node-cidrs=true', `--cluster-cidr=${realNode.clusterCidr}`, '--node-cidr-mask-size=24'] : []),
        ]),
      );
    }
    if (withScheduler) {
      started.push(
        launch('kube-scheduler', bins.kubeScheduler, [
          `--kubeconfig=${kubeconfigPath}`,
          `--authentication-kubeconfig=${kubeconfigPath}`,
          `--authorization-kubeconfig=${kubeconfigPath}`,
          '--authentication-skip-lookup=true',
          '--bind-address=127.0.0.1',
          `--secure-port=${schedPort}`,
          `--cert-dir=${join(dir, 'certs', 'scheduler')}`,
          '--leader-elect=false',
          '--profiling=false',
        ]),
      );
    }
    const nodeName = 'kwok-node-0';
    if (withKwok) {
      started.push(
        launch('kwok', bins.kwok, [
          `--kubeconfig=${kubeconfigPath}`,
          `--config=${bins.kwokStages}`,
          '--manage-all-nodes=false',
          '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
          '--cidr=10.244.0.0/16',
          '--node-ip=10.244.0.1',
          `--server-address=127.0.0.1:${kwokPort}`,
          '--node-lease-duration-seconds=40',
        ]),
      );
    }
    const watch = [...core, ...started];
    const healthz = (port: number) => async () => (await request(`https://127.0.0.1:${port}/healthz`, { insecure: true })).status === 200;
    if (withKcm) await waitFor('kube-controller-manager /healthz', healthz(kcmPort), watch);
    if (withScheduler) await waitFor('kube-scheduler /healthz', healthz(schedPort), watch);
    if (withKwok) {
      const node = {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name: nodeName,
          annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
          labels: {
            'kubernetes.io/hostname': nodeName,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            'node-role.kubernetes.io/agent': '',
            type: 'kwok',
          },
        },
        spec: {},
      };
      const r = await request(`${server}/api/v1/nodes`, admin, 'POST', node);
      if (r.status !== 201) throw new Error(`creating kwok node failed: ${r.status} ${r.body}`);
      await waitFor(
        `node ${nodeName} Ready (kwok)`,
        async () => {
          const n = JSON.parse((await request(`${server}/api/v1/nodes/${nodeName}`, admin)).body);
          return (n.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
        },
        watch,
      );
      // kwok's node stages report cpu, memory and pods but no ephemeral-storage, and the scheduler
      // refuses a pod requesting some (capsule pods do) on a node with none allocatable; a kubelet
      // reports its disk. Its status stages keep an allocatable that is already there.
      // A heartbeat between the read and the write is a 409: read again.
      for (let attempt = 1; ; attempt++) {
        const n = JSON.parse((await request(`${server}/api/v1/nodes/${nodeName}`, admin)).body);
        const resources = { ...n.status.allocatable, 'ephemeral-storage': '1Ti' };
        const put = await request(`${server}/api/v1/nodes/${nodeName}/status`, admin, 'PUT', {
          ...n,
          status: { ...n.status, capacity: resources, allocatable: resources },
        });
        if (put.status === 200) break;
        if (put.status !== 409 || attempt === 5) throw new Error(`giving node ${nodeName} ephemeral-storage failed: ${put.status} ${put.body}`);
      }
    }
    const startupMs = Date.now() - t0;
    log(`cluster ready after ${startupMs} ms (controller-manager ${withKcm}, scheduler ${withScheduler}, kwok ${withKwok})`);

    return {
      kubeconfigPath,
      server,
      binDir,
      dir,
      features: { controllerManager: withKcm, scheduler: withScheduler, kwok: withKwok },
      nodeName: withKwok ? nodeName : undefined,
      startupMs,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
