/**
 * Density on the real node (issue 37 §3), a benchmark, not a test: N Capsules of the quickstart's
 * shape applied to the one node, every one asleep after its idle time, then woken from inside the
 * cluster — S one after another, then C at once — and what the node holds for them.
 *
 *   npm run bench -- density [--capsules 500] [--wave 80] [--idle 20s] [--sequential 50]
 *                            [--concurrent 20] [--name density] [--wave-timeout 900] [--settle-load 2]
 *                            [--out FILE] [--keep]
 *
 * The node: $KUBECONFIG when set (a node from `npm run node:up -- --name <n>`: its name is read
 * from the kubeconfig's path, else --name), else one started here (test/cluster/node/node.ts, the
 * operator installed with its chart as `npm run node:up` does) under --name and torn down at the
 * end. Needs Linux and root, like the realnode suite (docs/real-node.md).
 *
 * The Capsules (density-objects.ts): examples/k8s/quickstart.yaml's spec (the image's built-in
 * driver-anthropic, shell tools date/wc/echo) with the scripted provider as its endpoint (here,
 * one instant turn replayed for every task, reached from pods through host-services.ts
 * forwardIntoNode), `a2a.auth.anonymous`, ingress from pods labelled role=density-client,
 * `sleep.afterIdle` --idle, and the embedded store on a claim bound to a static hostPath
 * PersistentVolume made here (the node has no provisioner). Every new Capsule starts awake until
 * idle and a node takes about 110 pods, so they go in waves of --wave: a wave is applied, then
 * waited for (a watch: kubectl wait) until all of it is Sleeping, then the next. The wakes start
 * once every capsule pod is gone (Sleeping is written before the Deployment goes to 0) and the
 * machine has settled: its 1-minute load average below --settle-load (0: do not wait; at most 15
 * minutes). The waves' own churn (80 pods starting and stopping at once on 2 cores) held the load
 * at 20–100 for minutes after the last pod went, and wakes timed in it measured that churn.
 *
 * The wakes (density-client.mjs): a pod of the runtime image (Node 24, fetch) times each wake
 * inside the cluster, from the first byte of a blocking JSON-RPC `message/send` to the parsed answer
 * (its state must be `completed`): first S sleeping Capsules one after another, then C other
 * sleeping Capsules at once. Each request goes to the Capsule's Service, which the activator answers
 * while the Capsule sleeps: it asks the operator to wake it and holds the request until a pod is
 * ready (pod start, runtime start and the task included).
 *
 * Memory, read on the host right after the C concurrent wakes (density-host.ts), for each of those
 * C awake Capsules: the PSS of its `mur serve` process (smaps_rollup) and its pod cgroup's
 * memory.usage_in_bytes and total_rss (cgroup v1), median and max over the C; the operator's and the
 * activator's RSS (their node processes) with N Capsules asleep and again after the wakes; the
 * load average at the start and the end (a shared machine: say how loaded it was).
 *
 * Also counted: how many of the woken Capsules the activator asked to wake (WakeRequested Events).
 *
 * Progress goes to stderr; the figures to stdout and, with --out, a JSON summary to FILE. A wake
 * that did not complete (an error, a 502) is listed and makes the exit code 1, after the figures.
 * --keep leaves the namespace and volumes on a node given by $KUBECONFIG (one started here is
 * always torn down).
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { nodePaths, repoRoot, stateRoot } from '../test/cluster/node/config.ts';
import { startNode, type RealNode } from '../test/cluster/node/node.ts';
import { installOperator, operatorImages, runtimeImage } from '../test/cluster/node/operator.ts';
import { startScriptedProvider, type ScriptedProvider } from '../test/provider/scripted-provider.ts';
import { forwardIntoNode, type Forward } from '../test/realnode/host-services.ts';
import { loadAverage } from './density-host.ts';
import { diagnoseWave, followClient, kubectlFor, waitWaveSleeping, type Kubectl } from './density-kube.ts';
import { measureAwake, processRss, type AwakeMemory } from './density-memory.ts';
import { BENCH_LABEL, CLIENT_POD, NS, capsule, capsuleName, clientPod, list, storeVolume } from './density-objects.ts';
import { printSummary, wakeStats, type Summary, type Wake } from './density-report.ts';

const { values } = parseArgs({
  options: {
    capsules: { type: 'string', default: '500' },
    wave: { type: 'string', default: '80' },
    idle: { type: 'string', default: '20s' },
    sequential: { type: 'string', default: '50' },
    concurrent: { type: 'string', default: '20' },
    name: { type: 'string', default: 'density' },
    'wave-timeout': { type: 'string', default: '900' },
    'settle-load': { type: 'string', default: '2' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const usage = (m: string): never => {
  process.stderr.write(`density: ${m}\n`);
  process.exit(2);
};
const count = (flag: keyof typeof values): number => {
  const n = Number(values[flag]);
  if (!Number.isInteger(n) || n < 1) usage(`--${flag}: expected a positive whole number, got '${values[flag]}'`);
  return n;
};
const N = count('capsules');
const WAVE = count('wave');
const SEQ = count('sequential');
const CONC = count('concurrent');
const WAVE_TIMEOUT = count('wave-timeout');
const SETTLE_LOAD = Number(values['settle-load']);
if (!Number.isFinite(SETTLE_LOAD) || SETTLE_LOAD < 0) usage(`--settle-load: expected a load average ≥ 0, got '${values['settle-load']}'`);
if (SEQ + CONC > N) usage(`--sequential ${SEQ} + --concurrent ${CONC} wake different capsules: more than --capsules ${N}`);
/** Where the scripted provider answers on the node's address (the node's own network namespace). */
const PROVIDER_PORT = 18090;
const log = (m: string) => process.stderr.write(`[density] ${m}\n`);
const secs = (ms: number) => ms / 1000;

/** The node's name: from a kubeconfig under the node state root (<root>/<name>/kubeconfig), else --name. */
function nodeNameOf(kubeconfig: string): string {
  const dir = dirname(resolve(kubeconfig));
  return dirname(dir) === resolve(stateRoot) && basename(kubeconfig) === 'kubeconfig' ? basename(dir) : values.name!;
}

async function applyWaves(k: Kubectl, kubeconfig: string, endpoint: string, nodeState: string): Promise<Summary['waves']> {
  const waves: Summary['waves'] = [];
  const t0 = Date.now();
  let sleeping = 0;
  for (let w = 0, first = 0; first < N; w++, first += WAVE) {
    const names = Array.from({ length: Math.min(WAVE, N - first) }, (_, i) => capsuleName(first + i));
    const tw = Date.now();
    await k(['apply', '-f', '-'], list(names.flatMap((c) => [storeVolume(c, nodeState), capsule(c, { wave: w, idle: values.idle!, endpoint })])));
    const applied = Date.now();
    log(`wave ${w + 1}/${Math.ceil(N / WAVE)} applied: ${names.length} capsules (${first + names.length}/${N}) at ${secs(applied - t0).toFixed(1)} s`);
    let met = 0;
    try {
      await waitWaveSleeping(kubeconfig, w, WAVE_TIMEOUT, () => {
        met++;
        if (met % 10 === 0 || met === names.length)
          log(`sleeping ${sleeping + met}/${N} (wave ${w + 1}: ${met}/${names.length}) at ${secs(Date.now() - t0).toFixed(1)} s`);
      });
    } catch (e) {
      log(await diagnoseWave(k, w).catch((d: Error) => `(no diagnosis: ${d.message})`));
      throw e;
    }
    sleeping += names.length;
    waves.push({
      wave: w,
      capsules: names.length,
      appliedAtS: secs(applied - t0),
      sleepingAtS: secs(Date.now() - t0),
      applyToSleepingS: secs(Date.now() - tw),
    });
  }
  return waves;
}

/** Runs the client pod and returns its wakes; `onDone` runs the moment the last wake answered (memory is read then, while the woken are awake). */
async function runClient(k: Kubectl, kubeconfig: string, sequential: string[], concurrent: string[], onDone: () => Promise<void>): Promise<Wake[]> {
  await k(['apply', '-f', '-'], JSON.stringify(clientPod(runtimeImage(), sequential, concurrent)));
  await k(['-n', NS, 'wait', `pod/${CLIENT_POD}`, '--for=condition=Ready', '--timeout=180s']);
  const wakes: Wake[] = [];
  let concurrentSeen = 0;
  await followClient(kubeconfig, (o) => {
    if (o.ready) {
      const r = o.ready as { attempts: number; ms: number };
      return log(`client: the first card answered after ${r.attempts} attempt(s), ${secs(r.ms).toFixed(1)} s; waking`);
    }
    const wk = o as unknown as Wake;
    wakes.push(wk);
    const n = wk.kind === 'sequential' ? wakes.length : ++concurrentSeen;
    const of = wk.kind === 'sequential' ? SEQ : CONC;
    log(`${wk.kind} wake ${n}/${of}: ${secs(wk.ms).toFixed(2)} s ${wk.state ?? ''}${wk.error ? ` ERROR ${wk.error}` : ''}`);
  });
  await onDone();
  await k(['-n', NS, 'delete', 'pod', CLIENT_POD, '--wait=false']);
  return wakes;
}

/** Resolves once no capsule pod is left in the namespace (kubectl wait --for=delete: a watch). */
async function noCapsulePods(k: Kubectl): Promise<void> {
  await k(['-n', NS, 'wait', 'pod', '-l', 'murmur.io/capsule', '--for=delete', `--timeout=${WAVE_TIMEOUT}s`]).catch((e: Error) => {
    if (!/no matching resources/i.test(e.message)) throw e;
  });
}

/**
 * Waits until the machine's 1-minute load average is below --settle-load (polled every 5 s: the
 * kernel updates it every 5 s), at most 15 minutes; the seconds it took.
 */
async function settle(): Promise<number> {
  const t = Date.now();
  if (SETTLE_LOAD === 0) return 0;
  for (let i = 0; loadAverage()[0] >= SETTLE_LOAD && Date.now() - t < 15 * 60_000; i++) {
    if (i % 6 === 0) log(`settling: load ${loadAverage().join(' ')}, waiting for the 1-minute average below ${SETTLE_LOAD}`);
    await new Promise((r) => setTimeout(r, 5000));
  }
  return secs(Date.now() - t);
}

/** The Capsules the activator asked to wake (its WakeRequested Events): each woken one should be among them. */
async function capsulesWoken(k: Kubectl): Promise<Set<string>> {
  const events = JSON.parse(await k(['-n', NS, 'get', 'events', '--field-selector', 'reason=WakeRequested,involvedObject.kind=Capsule', '-o', 'json']));
  return new Set((events.items as { involvedObject: { name: string } }[]).map((e) => e.involvedObject.name));
}

async function main(): Promise<void> {
  const loadStart = loadAverage();
  const started = Date.now();
  let node: RealNode | undefined;
  let provider: ScriptedProvider | undefined;
  let forward: Forward | undefined;
  let kubeconfig = process.env.KUBECONFIG;
  let k: Kubectl | undefined;
  try {
    if (!kubeconfig) {
      node = await startNode({ name: values.name!, images: operatorImages(), log });
      kubeconfig = node.kubeconfig;
      installOperator(kubeconfig, log);
    }
    const nodeName = node?.name ?? nodeNameOf(kubeconfig);
    const paths = nodePaths(nodeName);
    const kc = kubectlFor(kubeconfig);
    k = kc;
    provider = await startScriptedProvider({ turns: [{ text: 'Awake.' }], onExhausted: 'repeat-last' });
    forward = await forwardIntoNode(PROVIDER_PORT, provider.port, 'density-provider', nodeName);
    log(`node ${nodeName}; ${N} capsules in waves of ${WAVE}, afterIdle ${values.idle}; load ${loadStart.join(' ')}`);
    // The bench's own namespace and volumes: what an earlier run left goes first.
    await k(['delete', 'namespace', NS, '--ignore-not-found', '--timeout=600s']);
    await k(['delete', 'persistentvolume', '-l', `${BENCH_LABEL}=${NS}`, '--ignore-not-found']);
    await k(['create', 'namespace', NS]);
    await k(['-n', NS, 'create', 'secret', 'generic', 'anthropic-key', '--from-literal=api-key=sk-ant-density-bench']);

    const tApply = Date.now();
    const waves = await applyWaves(k, kubeconfig, forward.url, paths.state);
    const allSleepingS = secs(Date.now() - tApply);
    // Sleeping is written before the Deployment goes to 0: a wake is timed only once no capsule pod is left.
    await noCapsulePods(kc);
    const noPodsS = secs(Date.now() - tApply);
    const rssAsleep = processRss(paths.cgroupRoot);
    log(
      `all ${N} sleeping after ${allSleepingS.toFixed(1)} s, their pods gone at ${noPodsS.toFixed(1)} s; operator RSS ${mib(rssAsleep.operator)}, activator ${mib(rssAsleep.activator)}`,
    );

    const settledS = await settle();
    const loadAtWakes = loadAverage();
    log(`wakes start at load ${loadAtWakes.join(' ')} (${settledS.toFixed(0)} s to settle)`);

    const sequential = Array.from({ length: SEQ }, (_, i) => capsuleName(i));
    const concurrent = Array.from({ length: CONC }, (_, i) => capsuleName(SEQ + i));
    let awake: AwakeMemory[] = [];
    const wakes = await runClient(k, kubeconfig, sequential, concurrent, async () => {
      awake = await measureAwake(kc, paths.cgroupRoot, concurrent);
    });
    const rssAfter = processRss(paths.cgroupRoot);
    const woken = await capsulesWoken(kc);
    const summary: Summary = {
      date: new Date().toISOString(),
      commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim(),
      node: nodeName,
      capsules: N,
      wave: WAVE,
      idle: values.idle!,
      load: { start: loadStart, atWakes: loadAtWakes, end: loadAverage() },
      allAppliedS: waves[waves.length - 1]!.appliedAtS,
      allSleepingS,
      noPodsS,
      waves,
      sequential: wakeStats(wakes.filter((w) => w.kind === 'sequential')),
      concurrent: wakeStats(wakes.filter((w) => w.kind === 'concurrent')),
      awake,
      activatorWoke: [...sequential, ...concurrent].filter((c) => woken.has(c)).length,
      rss: { asleep: rssAsleep, afterWakes: rssAfter },
      wallS: secs(Date.now() - started),
    };
    console.log(printSummary(summary));
    if (values.out) writeFileSync(values.out, `${JSON.stringify(summary, null, 2)}\n`);
    // A caller of a sleeping capsule should see latency, never an error (issue 37 §1): say so by the exit code too.
    const failed = summary.sequential.n - summary.sequential.completed + summary.concurrent.n - summary.concurrent.completed;
    if (failed) {
      log(`${failed} wake(s) did not complete (listed above)`);
      process.exitCode = 1;
    }
  } finally {
    await forward?.stop();
    await provider?.stop();
    if (node) await node.stop();
    else if (k && !values.keep) {
      await k(['delete', 'namespace', NS, '--ignore-not-found', '--timeout=600s']).catch((e: Error) => log(e.message));
      await k(['delete', 'persistentvolume', '-l', `${BENCH_LABEL}=${NS}`, '--ignore-not-found']).catch((e: Error) => log(e.message));
    }
  }
}

const mib = (b: number | undefined) => (b === undefined ? 'n/a' : `${(b / 2 ** 20).toFixed(1)} MiB`);

main().catch((e) => {
  log(`FAILED: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
