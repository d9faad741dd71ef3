/**
 * Operator benchmark (not a test): N Capsules (default 1000) applied to a real API server → time
 * until every one is reconciled (all objects applied and status written, seen on one watch), the
 * operator's own CPU seconds for it, the mean reconcile latency (while converging, and for the
 * no-op reconciles of the steady state), the operator's RSS idle and with N Capsules (sampled every
 * second over the steady state: median, min, max) with its V8 heap per space, and that a
 * steady-state resync writes nothing. One run: no repeated rounds, so single figures except RSS.
 *
 *   node --import tsx bench/operator.ts [--capsules 1000] [--workers 16] [--arm pod|tsx] [--profile DIR]
 *
 * --profile DIR: the operator runs with --cpu-prof (profile written at exit) and a heap snapshot
 * is taken (SIGUSR2) at N Capsules, both into DIR; the figures of such a run include the profiler.
 *
 * Arms: `pod` (default) runs the operator as its image does: compiled JS from dist/ (built
 * first), the node flags of operator/Dockerfile's ENTRYPOINT, with in-cluster auth (a
 * ServiceAccount token and the CA in a directory, as the kubelet mounts them; cluster-admin in this
 * throwaway cluster), so @kubernetes/client-node is never loaded. `tsx` runs operator/main.ts through tsx with the kubeconfig (the development setup).
 *
 * Uses $KUBECONFIG when set, otherwise starts the test cluster (etcd + kube-apiserver only: no
 * controller-manager, so the figures are the operator's own work, not ReplicaSets and pods).
 * The operator runs as a child process (`operator/main.ts`), so its RSS is its own.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeClient } from '../operator/kube/client.ts';
import { kubectlPath, repoRoot, startCluster, ensureBinaries, type Cluster } from '../test/cluster/harness.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parse as parseYaml } from 'yaml';

const { values } = parseArgs({
  options: {
    capsules: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '16' },
    resync: { type: 'string', default: '10' },
    arm: { type: 'string', default: 'pod' },
    profile: { type: 'string' },
  },
});
const N = Number(values.capsules);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

function metric(text: string, name: string, label?: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (label && !rest.includes(label)) continue;
    sum += Number(line.split(' ').pop());
  }
  return sum;
}

/** The node flags of the operator image's ENTRYPOINT (operator/Dockerfile), so arm `pod` runs node as the image does. */
function imageNodeFlags(): string[] {
  const line = readFileSync(join(repoRoot, 'operator/Dockerfile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('ENTRYPOINT '));
  if (!line) throw new Error('operator/Dockerfile has no ENTRYPOINT line');
  const argv = JSON.parse(line.slice('ENTRYPOINT '.length)) as string[];
  return argv.slice(1).filter((a) => a.startsWith('--'));
}

/** A ServiceAccount (cluster-admin here) with a token and the cluster CA in a directory, as a pod has them. */
async function serviceAccountDir(kubeconfig: string, ns: string): Promise<string> {
  const k = (args: string[]) => execFileSync(kubectlPath(), args, { env: { ...process.env, KUBECONFIG: kubeconfig }, encoding: 'utf8' });
  k(['create', 'serviceaccount', 'bench-operator', '-n', ns]);
  k(['create', 'clusterrolebinding', `bench-operator-${ns}`, '--clusterrole=cluster-admin', `--serviceaccount=${ns}:bench-operator`]);
  const token = k(['create', 'token', 'bench-operator', '-n', ns, '--duration=1h']).trim();
  const kc = parseYaml(readFileSync(kubeconfig, 'utf8'));
  const dir = mkdtempSync(join(tmpdir(), 'bench-sa-'));
  writeFileSync(join(dir, 'token'), token);
  writeFileSync(join(dir, 'ca.crt'), Buffer.from(kc.clusters[0].cluster['certificate-authority-data'], 'base64'));
  return dir;
}

async function main(): Promise<void> {
  let cluster: Cluster | undefined;
  let kubeconfig = process.env.KUBECONFIG;
  if (!kubeconfig) {
    await ensureBinaries();
    cluster = await startCluster({ withControllerManager: false, withScheduler: false, withKwok: false });
    kubeconfig = cluster.kubeconfigPath;
    console.log(`cluster up in ${cluster.startupMs} ms`);
  }
  const client = KubeClient.fromFile(kubeconfig);
  const ns = `bench-${Date.now().toString(36)}`;
  const port = await freePort();
  let child: ReturnType<typeof spawn> | undefined;
  try {
    execFileSync(kubectlPath(), ['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      stdio: 'ignore',
    });
    execFileSync(kubectlPath(), ['wait', '--for=condition=Established', 'crd/capsules.murmur.io', 'crd/hooks.murmur.io'], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      stdio: 'ignore',
    });
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'key', namespace: ns }, stringData: { 'api-key': 'x' } });

    const common = { WATCH_NAMESPACES: ns, LEADER_ELECTION: 'false', HTTP_PORT: String(port), WORKERS: values.workers, RESYNC_SECONDS: values.resync };
    if (values.arm === 'tsx') {
      child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'operator/main.ts')], {
        env: { ...process.env, KUBECONFIG: kubeconfig, ...common },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    } else {
      execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: repoRoot, stdio: 'inherit' });
      const saDir = await serviceAccountDir(kubeconfig, ns);
      const { KUBECONFIG: _kc, ...env } = process.env;
      // --profile DIR: a CPU profile of the whole run and a heap snapshot at N capsules, into DIR.
      const prof = values.profile
        ? ['--cpu-prof', `--diagnostic-dir=${values.profile}`, `--cpu-prof-dir=${values.profile}`, '--heapsnapshot-signal=SIGUSR2']
        : [];
      child = spawn(process.execPath, [...imageNodeFlags(), ...prof, join(repoRoot, 'dist/operator/main.js')], {
        env: {
          ...env,
          ...common,
          KUBERNETES_SERVICE_HOST: client.server.hostname.replace(/^\[|\]$/g, ''),
          KUBERNETES_SERVICE_PORT: client.server.port || '443',
          CAPSULE_OPERATOR_SERVICE_ACCOUNT_DIR: saDir,
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    }
    // A kept-alive connection the server closed meanwhile fails once (ECONNRESET): retry.
    const scrape = async (): Promise<string> => {
      for (let i = 0; ; i++) {
        try {
          return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        } catch (e) {
          if (i >= 3) throw e;
        }
      }
    };
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) break;
      } catch {
        /* not up yet */
      }
      await sleep(100);
    }
    const mIdle = await scrape();
    const rssIdle = metric(mIdle, 'capsule_operator_process_resident_memory_bytes');

    const cpu0 = metric(mIdle, 'capsule_operator_process_cpu_seconds_total');
    // Completion is seen on one watch of the Capsules (polling a list of N Capsules every 250 ms
    // made the bench itself a large load on the API server it measures).
    const capsulesPath = `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules`;
    const reconciled = new Set<string>();
    const stopWatch = new AbortController();
    let allDone: () => void = () => {};
    const whenAllDone = new Promise<void>((r) => (allDone = r));
    const { resourceVersion: rv0 } = await client.list(capsulesPath);
    const watching = (async () => {
      let rv = rv0;
      while (!stopWatch.signal.aborted) {
        await client
          .watch(
            capsulesPath,
            { resourceVersion: rv, allowWatchBookmarks: true },
            // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
            (type, c: any) => {
              if (c?.metadata?.resourceVersion) rv = c.metadata.resourceVersion;
              if (type !== 'ADDED' && type !== 'MODIFIED') return;
              if (c.status?.configHash && c.status.observedGeneration === c.metadata.generation) reconciled.add(c.metadata.name);
              if (reconciled.size >= N) allDone();
            },
            stopWatch.signal,
          )
          .catch(() => sleep(200));
      }
    })();
    const t0 = Date.now();
    const names = Array.from({ length: N }, (_, i) => `cap-${i}`);
    const conc = 32;
    for (let i = 0; i < names.length; i += conc) {
      await Promise.all(
        names.slice(i, i + conc).map((name, j) =>
          client.create({
            apiVersion: 'murmur.io/v1alpha1',
            kind: 'Capsule',
            metadata: { name, namespace: ns },
            spec: {
              artifacts: [{ name: 'drv', runtime: 'driver', version: '1.0.0' }],
              capabilities: { network: { allow: ['https://api.example.com', `capsule://${ns}/cap-${(i + j + 1) % N}`] } },
              inference: { driver: { artifact: 'drv' }, model: 'm', endpoint: 'https://api.anthropic.com', apiKeySecretRef: { name: 'key', key: 'api-key' } },
            },
          }),
        ),
      );
    }
    const tCreated = Date.now() - t0;
    await whenAllDone;
    const tAll = Date.now() - t0;
    stopWatch.abort();
    await watching;
    const cpuAll = metric(await scrape(), 'capsule_operator_process_cpu_seconds_total') - cpu0;
    const deps = (await client.list(`/apis/apps/v1/namespaces/${ns}/deployments`)).items.length;
    const nps = (await client.list(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`)).items.length;
    // Let the watch echoes of our own writes settle, then measure a steady state across resyncs.
    let m = await scrape();
    for (;;) {
      await sleep(2000);
      const m2 = await scrape();
      if (metric(m2, 'capsule_operator_writes_total') === metric(m, 'capsule_operator_writes_total') && metric(m2, 'capsule_operator_queue_depth') === 0) {
        m = m2;
        break;
      }
      m = m2;
    }
    const writes0 = metric(m, 'capsule_operator_writes_total');
    const rec0 = metric(m, 'capsule_operator_reconcile_total');
    const resyncMs = Number(values.resync) * 1000;
    // RSS moves with each GC: sampled every second across the steady-state window (min/median/max).
    const rssSamples: number[] = [];
    const tSteady = Date.now();
    while (Date.now() - tSteady < resyncMs * 2 + 3000) {
      await sleep(1000);
      rssSamples.push(metric(await scrape(), 'capsule_operator_process_resident_memory_bytes'));
    }
    const m3 = await scrape();
    rssSamples.sort((a, b) => a - b);
    const rssLoaded = rssSamples[Math.floor(rssSamples.length / 2)]!;
    if (values.profile) {
      child?.kill('SIGUSR2');
      await sleep(15_000); // the snapshot is written synchronously by the child; give it time
    }
    const writes1 = metric(m3, 'capsule_operator_writes_total');
    const rec1 = metric(m3, 'capsule_operator_reconcile_total');
    const durSum = (t: string) => metric(t, 'capsule_operator_reconcile_duration_seconds_sum');
    const durCount = (t: string) => metric(t, 'capsule_operator_reconcile_duration_seconds_count');
    const durConverge = durSum(m) / Math.max(1, durCount(m));
    const durSteady = (durSum(m3) - durSum(m)) / Math.max(1, durCount(m3) - durCount(m));
    const mb = (b: number) => (b / 2 ** 20).toFixed(1);
    console.log(`arm: ${values.arm}; capsules: ${N} (workers ${values.workers})`);
    console.log(`created in ${tCreated} ms; all reconciled (6 objects + status each) in ${tAll} ms (${((N / tAll) * 1000).toFixed(0)} capsules/s)`);
    console.log(
      `operator CPU to converge: ${cpuAll.toFixed(1)} s (user + system; what the operator itself spent, unlike the wall time above, which waits on a shared API server)`,
    );
    console.log(`objects: ${deps} Deployments, ${nps} NetworkPolicies`);
    console.log(
      `writes to converge: ${writes0} (${(writes0 / N).toFixed(2)} per capsule: ${metric(m, 'capsule_operator_writes_total', 'verb="apply"')} apply, ${metric(m, 'capsule_operator_writes_total', 'verb="status"')} status)`,
    );
    console.log(`steady state: ${rec1 - rec0} reconciles over ${((resyncMs * 2 + 3000) / 1000).toFixed(0)} s of resyncs → ${writes1 - writes0} writes`);
    console.log(
      `mean reconcile: ${(durConverge * 1000).toFixed(2)} ms while converging (${durCount(m)} reconciles, ${values.workers} at a time, each waiting on its API writes); ${(durSteady * 1000).toFixed(2)} ms in steady state (${durCount(m3) - durCount(m)} no-op reconciles)`,
    );
    console.log(
      `operator RSS: ${mb(rssIdle)} MiB idle → ${mb(rssLoaded)} MiB with ${N} capsules (median of ${rssSamples.length} samples over the steady state; min ${mb(rssSamples[0]!)}, max ${mb(rssSamples[rssSamples.length - 1]!)}; ${((rssLoaded - rssIdle) / N / 1024).toFixed(1)} KiB per capsule)`,
    );
    const heap = (t: string) =>
      `${mb(metric(t, 'capsule_operator_nodejs_heap_size_used_bytes'))}/${mb(metric(t, 'capsule_operator_nodejs_heap_size_total_bytes'))} MiB`;
    const spaces = (t: string) =>
      t
        .split('\n')
        .filter((l) => l.startsWith('capsule_operator_nodejs_heap_space_size_total_bytes{'))
        .map((l) => `${/space="([^"]+)"/.exec(l)?.[1]} ${mb(Number(l.split(' ').pop()))}`)
        .join(', ');
    console.log(
      `V8 heap used/total: ${heap(mIdle)} idle → ${heap(m3)} with ${N} capsules (spaces, MiB: ${spaces(m3)}); external ${mb(metric(m3, 'capsule_operator_nodejs_external_memory_bytes'))} MiB`,
    );
  } finally {
    child?.kill('SIGTERM');
    await sleep(500);
    await client.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => {});
    client.close();
    await cluster?.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
