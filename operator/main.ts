/**
 * capsule-operator entry point. Configuration comes from the environment (the Helm chart sets it):
 *   WATCH_NAMESPACES         comma-separated; empty = all namespaces
 *   RUNTIME_IMAGE            default runtime image for capsules
 *   RUNTIME_IMAGE_PULL_POLICY
 *   LEADER_ELECTION          "true" (default) / "false"
 *   LEASE_NAME, LEASE_NAMESPACE (default POD_NAMESPACE), POD_NAME (identity)
 *   HTTP_PORT                /metrics, /healthz, /readyz (default 8080)
 *   WORKERS (default 4), RESYNC_SECONDS (default 300)
 *   OTLP_ENDPOINT, OTLP_HEADERS_SECRET_NAME, OTLP_HEADERS_SECRET_KEY
 *   EGRESS_EXCEPT            CIDRs kept out of hostname egress rules (unset: the private ranges; the chart sets pod + service CIDRs and private ranges)
 *   METRICS_FROM_NAMESPACES  namespaces allowed to scrape capsule metrics; empty = any source
 *   USAGE_SCRAPE_INTERVAL_SECONDS  scrape capsule pods for status.usage every N s (default 60; 0 = off)
 *   USAGE_SCRAPE_TIMEOUT_SECONDS   per-pod timeout (default 5); USAGE_SCRAPE_CONCURRENCY (default 8)
 *   OPERATOR_POD_LABELS      k=v,... labels of the operator's pods: with METRICS_FROM_NAMESPACES set,
 *                            capsule NetworkPolicies admit these pods (in POD_NAMESPACE) on the
 *                            metrics port so the usage scraper reaches them
 *   DNS_NAMESPACE, DNS_POD_LABELS  where cluster DNS runs (default kube-system, k8s-app=kube-dns)
 *   CLUSTER_DOMAIN           default cluster.local
 *   API_SERVER_EGRESS        cidr:port,... of the API server's endpoints: capsule pods that verify
 *                            ServiceAccount tokens (TokenReview) may reach them; the `kubernetes`
 *                            Service address (KUBERNETES_SERVICE_HOST/PORT) is added in a pod
 *   KUBECONFIG               outside a cluster
 *   CAPSULE_ACTIVATOR_SERVICE, _NAMESPACE, _PORT, _POD_LABELS  where the activator of sleeping
 *                            Capsules is (controller/activator-config.ts); unset: no Capsule sleeps
 *   CAPSULE_ACTIVATOR_KEY_FILE  with an activator: the file holding the key of the API-key digests (activator/key.ts; or CAPSULE_ACTIVATOR_KEY, the key)
 *   CAPSULE_OPERATOR_WRITE_DELAY_MS  tests only: sleep before each object write (to kill the
 *                            operator mid-reconcile)
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { clusterSource, noClusterMessage } from './kube/cluster-source.ts';
import { KubeClient } from './kube/client.ts';
import { startOperator } from './operator.ts';
import { DEFAULT_RUNTIME_IMAGE, PRIVATE_RANGES, defaultOptions } from './translate/options.ts';
import { operatorPeer, usageFromEnv } from './usage/config.ts';
import { ActivatorConfigError, activatorFromEnv } from './controller/activator-config.ts';
import { activatorKeyFrom, ActivatorKeyError } from './activator/key.ts';
import { dnsFromEnv } from './translate/dns.ts';
import { apiServerFromEnv } from './translate/api-server.ts';

const env = process.env;
const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);

async function main(): Promise<void> {
  const source = clusterSource(env, existsSync);
  if (source.kind === 'none') {
    log(`fatal: ${noClusterMessage(source)}`);
    process.exit(1);
  }
  const client = new KubeClient();
  const identity = env.POD_NAME || `${hostname()}-${process.pid}`;
  const metricsFrom = list(env.METRICS_FROM_NAMESPACES);
  const otlpSecret =
    env.OTLP_HEADERS_SECRET_NAME && env.OTLP_HEADERS_SECRET_KEY ? { name: env.OTLP_HEADERS_SECRET_NAME, key: env.OTLP_HEADERS_SECRET_KEY } : undefined;
  const { usage, usageScraper: scraperPeer } = usageFromEnv(env);
  let activator: ReturnType<typeof activatorFromEnv>;
  let activatorKey: Buffer | undefined;
  try {
    activator = activatorFromEnv(env);
    // With an activator, Capsules taking API keys sleep: their digests need the key.
    if (activator) activatorKey = activatorKeyFrom(env);
  } catch (e) {
    if (!(e instanceof ActivatorConfigError || e instanceof ActivatorKeyError)) throw e;
    log(`fatal: ${e.message}`);
    process.exit(1);
  }
  // The operator's pods, admitted by capsule policies where it reads pods: metrics while usage
  // scraping is on, the a2a port (agent card) of Capsules that sleep.
  const usageScraper = scraperPeer ?? (activator ? operatorPeer(env) : undefined);
  const pull = env.RUNTIME_IMAGE_PULL_POLICY as 'Always' | 'IfNotPresent' | 'Never' | undefined;
  const op = await startOperator({
    client,
    translate: defaultOptions({
      image: env.RUNTIME_IMAGE || DEFAULT_RUNTIME_IMAGE,
      ...(pull ? { imagePullPolicy: pull } : {}),
      ...(env.OTLP_ENDPOINT ? { otlp: { endpoint: env.OTLP_ENDPOINT, ...(otlpSecret ? { headersSecret: otlpSecret } : {}) } } : {}),
      // Unset: the private ranges; set (the chart always sets it): exactly the given list.
      egressExcept: env.EGRESS_EXCEPT === undefined ? [...PRIVATE_RANGES] : list(env.EGRESS_EXCEPT),
      dns: dnsFromEnv(env),
      ...(metricsFrom.length ? { metricsFrom: metricsFrom.map((ns) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } })) } : {}),
      ...(usageScraper ? { usageScraper } : {}),
      clusterDomain: env.CLUSTER_DOMAIN || 'cluster.local',
      apiServer: apiServerFromEnv(env),
      ...(activator ? { activator: activator.activator } : {}),
    }),
    ...(activator ? { activatorService: activator.service } : {}),
    ...(activatorKey ? { activatorKey } : {}),
    namespaces: list(env.WATCH_NAMESPACES),
    workers: Number(env.WORKERS || 4),
    resyncMs: Number(env.RESYNC_SECONDS || 300) * 1000,
    httpPort: Number(env.HTTP_PORT || 8080),
    ...(env.LEADER_ELECTION === 'false'
      ? {}
      : {
          leaderElection: {
            namespace: env.LEASE_NAMESPACE || env.POD_NAMESPACE || 'default',
            name: env.LEASE_NAME || 'capsule-operator',
            identity,
            ...(env.LEASE_DURATION_MS ? { leaseDurationMs: Number(env.LEASE_DURATION_MS) } : {}),
            ...(env.RENEW_DEADLINE_MS ? { renewDeadlineMs: Number(env.RENEW_DEADLINE_MS) } : {}),
            ...(env.RETRY_PERIOD_MS ? { retryPeriodMs: Number(env.RETRY_PERIOD_MS) } : {}),
          },
        }),
    log,
    ...(usage ? { usage } : {}),
    ...(Number(env.CAPSULE_OPERATOR_WRITE_DELAY_MS) > 0
      ? { beforeWrite: () => new Promise<void>((r) => setTimeout(r, Number(env.CAPSULE_OPERATOR_WRITE_DELAY_MS))) }
      : {}),
  });
  log(`capsule-operator ${identity} up; http on :${op.port}`);
  let stopping = false;
  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log(`${sig}: shutting down`);
    const force = setTimeout(() => process.exit(1), 25_000);
    force.unref();
    op.stop()
      .then(() => {
        client.close();
        process.exit(0);
      })
      .catch(() => process.exit(1));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e: Error) => {
  log(`fatal: ${e.stack ?? e.message}`);
  process.exit(1);
});
