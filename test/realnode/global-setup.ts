// vitest globalSetup of the 'realnode' project (see vitest.config.ts): a REAL node (containerd,
// kubelet, kube-proxy, CoreDNS, kube-router) in its own network + mount namespace, with the
// runtime and operator images built from the Dockerfiles imported and the chart installed by helm.
//
// REALNODE_KUBECONFIG=<kubeconfig of `npm run node:up`> runs the tests on that node instead.
//
// Where the node cannot start (not Linux, not root, a build step failing) this throws with the
// reason: the suite fails, it never skips.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { binDir, ensureBinaries } from '../cluster/harness.ts';
import { nodeBuildScript } from '../cluster/node/config.ts';
import { preflight, startNode, type RealNode } from '../cluster/node/node.ts';
import { ensureImages, installOperator, operatorImages } from '../cluster/node/operator.ts';

export interface RealNodeInfo {
  kubeconfig: string;
  name: string;
  startupMs: number;
  operatorMs: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    realnode: RealNodeInfo;
  }
}

const load = (): string => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'n/a';
  }
};
const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const log = (m: string) => process.stderr.write(`[realnode ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((res, rej) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, CLUSTER_BIN_DIR: binDir } });
    c.on('error', rej);
    c.on('exit', (code, sig) => (code === 0 ? res() : rej(new Error(`${cmd} ${args.join(' ')} failed (${sig ?? `exit code ${code}`}); see its output above`))));
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const t0 = Date.now();
  // A node brought up by `npm run node:up` (operator installed): use it, start and stop nothing.
  const existing = process.env.REALNODE_KUBECONFIG;
  if (existing) {
    log(`using the running node of REALNODE_KUBECONFIG=${existing}`);
    // its name (REALNODE_NAME, default that of node:up) locates its network namespace and state
    // directory, where host-side services (host-services.ts) run
    project.provide('realnode', { kubeconfig: existing, name: process.env.REALNODE_NAME ?? 'realnode', startupMs: 0, operatorMs: 0 });
    return async () => {};
  }
  if (process.platform !== 'linux' || (typeof process.getuid === 'function' && process.getuid() !== 0)) {
    throw new Error(`realnode suite: ${preflight()}. The real-node tests (test/realnode/) need Linux and root; run them where both hold (CI does: .ci/run).`);
  }
  await ensureBinaries();
  await run('bash', [nodeBuildScript]);
  await ensureImages(log);
  // the fixture components the pods fetch as `source: {url, sha256}` (hook.test.ts, script-peering.test.ts,
  // replicas.test.ts); cached by hash
  await run(process.execPath, ['--import', 'tsx', 'test/fixtures/build.ts', 'hook-deny-shell', 'script-capsule', 'sandbox-probe']);
  const why = preflight();
  if (why) throw new Error(`realnode suite: the real node cannot start: ${why}`);
  const buildMs = Date.now() - t0;
  log(`binaries and images ready in ${buildMs} ms`);

  const node: RealNode = await startNode({ images: operatorImages(), log: process.env.REALNODE_VERBOSE ? log : undefined });
  log(`node ${node.name} up in ${node.startupMs} ms (KUBECONFIG=${node.kubeconfig})`);
  let operatorMs = 0;
  try {
    const t1 = Date.now();
    installOperator(node.kubeconfig, log);
    operatorMs = Date.now() - t1;
  } catch (e) {
    await node.stop();
    throw e;
  }
  project.provide('realnode', { kubeconfig: node.kubeconfig, name: node.name, startupMs: node.startupMs, operatorMs });
  const testsFrom = Date.now();
  return async () => {
    const t = Date.now();
    await node.stop();
    // The real-node suite's own time, on one line (.ci/run prints it beside its step times).
    log(`node down in ${Date.now() - t} ms`);
    process.stderr.write(
      `::: real-node suite: ${secs(Date.now() - t0)} (builds/images ${secs(buildMs)}, node up ${secs(node.startupMs)}, ` +
        `operator ${secs(operatorMs)}, tests ${secs(t - testsFrom)}, teardown ${secs(Date.now() - t)}; load ${load()})\n`,
    );
  };
}
