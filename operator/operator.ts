/**
 * startOperator: the whole operator in one call (used by main.ts and, in-process, by the tests):
 * HTTP server (/metrics, /healthz, /readyz), leader election on a Lease (optional), and the
 * Capsule controller and the token-usage scraper, started when this replica leads and stopped when
 * it stops leading.
 */
import type http from 'node:http';
import type { KubeObject } from './api/types.ts';
import { CapsuleController } from './controller/controller.ts';
import { LeaderElector } from './controller/leader.ts';
import { OperatorMetrics } from './controller/metrics.ts';
import { startHttpServer } from './controller/server.ts';
import type { KubeClient } from './kube/client.ts';
import type { TranslateOptions } from './translate/options.ts';
import { IdleScraper, type IdleOptions } from './usage/idle.ts';
import { UsageScraper, type UsageOptions } from './usage/scraper.ts';

export interface OperatorConfig {
  client: KubeClient;
  translate: TranslateOptions;
  namespaces?: string[];
  /** With `namespaces`: one cluster-wide Capsule watch when RBAC allows, telling Capsules elsewhere (default true; ControllerOptions). */
  clusterCapsules?: boolean;
  workers?: number;
  resyncMs?: number;
  /** Port for /metrics, /healthz, /readyz; 0 = any free port; undefined = no server. */
  httpPort?: number;
  httpHost?: string;
  leaderElection?: { namespace: string; name: string; identity: string; leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  log?: (msg: string) => void;
  /** Default metrics (process_*) on; tests running several operators in one process turn them off. */
  defaultMetrics?: boolean;
  beforeWrite?: (obj: KubeObject) => Promise<void> | void;
  /** Token usage → status.usage (operator/usage/); undefined or intervalMs 0 = off. */
  usage?: UsageOptions;
  /** The activator's Service (controller/activator-config.ts); with translate.activator, Capsules may sleep. */
  activatorService?: { namespace: string; name: string };
  /** The activator key (activator/key.ts): Capsules taking API keys get their digests in status.sleep.apiKeyDigests. */
  activatorKey?: Uint8Array;
  /** The idle readings of sleep-enabled Capsules (operator/usage/idle.ts): timeouts, and the URLs tests point at a real `mur serve`. */
  idle?: Omit<IdleOptions, 'metrics' | 'log'>;
}

export interface Operator {
  readonly metrics: OperatorMetrics;
  readonly port: number | undefined;
  isLeader(): boolean;
  /** The leader elector when leader election is on (its attempts count is what tests wait on). */
  elector(): LeaderElector | undefined;
  controller(): CapsuleController | undefined;
  /** The usage scraper while this replica leads (and usage is on). */
  usage(): UsageScraper | undefined;
  /** The idle scraper of sleep-enabled Capsules while this replica leads (and an activator is configured). */
  idle(): IdleScraper | undefined;
  /** What /readyz answers: see `ready` in startOperator. */
  ready(): Promise<boolean>;
  /** Graceful shutdown: stop reconciling (in-flight work finishes), release the Lease, close. */
  stop(): Promise<void>;
}

export async function startOperator(cfg: OperatorConfig): Promise<Operator> {
  const log = cfg.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`));
  const metrics = new OperatorMetrics(cfg.defaultMetrics ?? true);
  let ctrl: CapsuleController | undefined;
  let scraper: UsageScraper | undefined;
  let idle: IdleScraper | undefined;
  let starting: Promise<void> | undefined;
  let stopping = false;

  const startController = () => {
    if (stopping || ctrl) return;
    const c = new CapsuleController(cfg.client, {
      translate: cfg.translate,
      ...(cfg.namespaces ? { namespaces: cfg.namespaces } : {}),
      ...(cfg.clusterCapsules !== undefined ? { clusterCapsules: cfg.clusterCapsules } : {}),
      workers: cfg.workers ?? 4,
      resyncMs: cfg.resyncMs ?? 300_000,
      metrics,
      identity: cfg.leaderElection?.identity,
      log,
      ...(cfg.beforeWrite ? { beforeWrite: cfg.beforeWrite } : {}),
      ...(cfg.activatorService ? { activatorService: cfg.activatorService } : {}),
      ...(cfg.activatorKey ? { activatorKey: cfg.activatorKey } : {}),
    });
    ctrl = c;
    // No activator, no sleep: nothing to read.
    const i =
      cfg.activatorService && cfg.translate.activator
        ? new IdleScraper(
            () => c.sleep.idleTargets(),
            (key) => c.enqueue(key),
            { ...cfg.idle, metrics, log },
          )
        : undefined;
    idle = i;
    c.sleep.idle = i;
    const u =
      cfg.usage && cfg.usage.intervalMs > 0
        ? new UsageScraper(cfg.client, c.capsules, { ...cfg.usage, ...(cfg.namespaces ? { namespaces: cfg.namespaces } : {}), metrics, log })
        : undefined;
    scraper = u;
    starting = c
      .start()
      .then(() => {
        u?.start();
        i?.start();
      })
      .catch((e: Error) => log(`controller failed to start: ${e.message}`));
  };
  const stopController = async () => {
    const c = ctrl;
    const u = scraper;
    const i = idle;
    ctrl = undefined;
    scraper = undefined;
    idle = undefined;
    await starting;
    await u?.stop();
    await i?.stop();
    await c?.stop();
  };

  let elector: LeaderElector | undefined;
  if (cfg.leaderElection) {
    elector = new LeaderElector(cfg.client, { ...cfg.leaderElection, log });
    elector.start(
      () => {
        metrics.leader.set(1);
        startController();
      },
      () => {
        metrics.leader.set(0);
        void stopController();
      },
    );
  } else {
    metrics.leader.set(1);
    startController();
  }

  /**
   * Ready: the leader's informers have all synced (a standby has none), and a request reaches the
   * API server now through the agent lists and writes use. Synced alone stayed true through an
   * outage and while every request waited for a socket (issue 38 §3).
   */
  const ready = async (): Promise<boolean> => {
    if (stopping) return false;
    if (elector?.isLeader !== false && !(ctrl?.synced ?? false)) return false;
    return cfg.client.reachable();
  };
  let server: http.Server | undefined;
  if (cfg.httpPort !== undefined) server = await startHttpServer(cfg.httpPort, metrics, { healthy: () => !stopping, ready }, cfg.httpHost);
  const addr = server?.address();

  return {
    metrics,
    port: addr && typeof addr === 'object' ? addr.port : undefined,
    isLeader: () => (elector ? elector.isLeader : true),
    elector: () => elector,
    controller: () => ctrl,
    usage: () => scraper,
    idle: () => idle,
    ready,
    async stop() {
      stopping = true;
      await stopController();
      await elector?.stop();
      metrics.leader.set(0);
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      server?.closeAllConnections();
    },
  };
}
