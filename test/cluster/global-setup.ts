// vitest globalSetup of the 'operator' project (see vitest.config.ts).
//
// - KUBECONFIG set: use that cluster; nothing is built or started.
// - Otherwise: run test/cluster/build.sh (a no-op when the binaries are up to date; fails clearly when
//   Go is missing), start etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok, and
//   stop them all in teardown.
//
// Tests get the kubeconfig path both as inject('kubeconfig') and as process.env.KUBECONFIG (vitest 4
// builds each fork's env from the main process's process.env when it schedules the test files, which
// happens after global setup; the value is also put into project.config.env to be explicit).
// inject('cluster') describes what runs.
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { binDir, ensureBinaries, startCluster, type Cluster } from './harness.ts';

export interface ClusterInfo {
  /** True when the tests use an existing cluster from $KUBECONFIG. */
  external: boolean;
  /** API server URL (empty for an external cluster: read it from the kubeconfig). */
  server: string;
  /** Where kubectl/helm are (may not exist for an external cluster; see kubectlPath()/helmPath() in harness.ts). */
  binDir: string;
  /** Garbage collection, namespace deletion, Deployment -> ReplicaSet -> Pod. */
  controllerManager: boolean;
  /** Pods get a nodeName. */
  scheduler: boolean;
  /** Pods on the simulated node become Running/Ready (kwok). */
  kwok: boolean;
  /** Scheduled pods become Ready (kwok locally; assumed true for an external cluster). */
  podsBecomeReady: boolean;
  /** The kwok node's name, when kwok runs. */
  nodeName?: string;
  /** Cluster start-up time in ms (0 for an external cluster). */
  startupMs: number;
  /**
   * The API server's ServiceAccount signing key (its --service-account-signing-key-file), for tests
   * that sign tokens the API server would never issue (expired ones). Absent for an external cluster.
   */
  saSigningKey?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    cluster: ClusterInfo;
  }
}

const log = (msg: string) => process.stderr.write(`[cluster] ${msg}\n`);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.KUBECONFIG;
  if (external) {
    log(`using the existing cluster from KUBECONFIG=${external}`);
    project.provide('kubeconfig', external);
    project.provide('cluster', {
      external: true,
      server: '',
      binDir,
      controllerManager: true,
      scheduler: true,
      kwok: false,
      podsBecomeReady: true,
      startupMs: 0,
    });
    return async () => {};
  }

  const tBuild = Date.now();
  await ensureBinaries();
  log(`binaries ready in ${binDir} (${Date.now() - tBuild} ms)`);

  const cluster: Cluster = await startCluster({ log: process.env.CLUSTER_VERBOSE ? log : undefined });
  log(
    `started in ${cluster.startupMs} ms: ${cluster.server} (kubeconfig ${cluster.kubeconfigPath}; ` +
      `controller-manager ${cluster.features.controllerManager}, scheduler ${cluster.features.scheduler}, kwok ${cluster.features.kwok})`,
  );

  process.env.KUBECONFIG = cluster.kubeconfigPath;
  try {
    project.config.env = { ...project.config.env, KUBECONFIG: cluster.kubeconfigPath };
  } catch {
    /* process.env above is what the forks inherit anyway */
  }
  project.provide('kubeconfig', cluster.kubeconfigPath);
  project.provide('cluster', {
    external: false,
    server: cluster.server,
    binDir: cluster.binDir,
    controllerManager: cluster.features.controllerManager,
    scheduler: cluster.features.scheduler,
    kwok: cluster.features.kwok,
    podsBecomeReady: cluster.features.kwok && cluster.features.scheduler && cluster.features.controllerManager,
    nodeName: cluster.nodeName,
    startupMs: cluster.startupMs,
    saSigningKey: join(cluster.dir, 'certs', 'sa.key'),
  });

  return async () => {
    await cluster.stop();
    if (process.env.KUBECONFIG === cluster.kubeconfigPath) delete process.env.KUBECONFIG;
  };
}
