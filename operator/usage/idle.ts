/**
 * How long each sleep-enabled Capsule's pods have been idle: the runtime's `capsule_idle_seconds`
 * gauge (0 while any task runs or any A2A request or stream is open), scraped from every ready
 * pod's /metrics with the usage scraper's HTTP code (scraper.ts: timeout, size cap, cancel).
 *
 * Each Capsule is scraped on its own interval, min(afterIdle/3, 30 s) and at least 2 s, so a
 * capsule is put to sleep at most about a third of its afterIdle late, and a capsule of 15m costs
 * one small GET per pod every 30 s. Only the latest reading of each pod is kept (in memory: the
 * next leader reads again). The controller is told (`onIdle`) only when a round finds every pod
 * idle for afterIdle, so a cluster of busy or young capsules causes no reconciles; the decision
 * itself is the state machine's, in the reconcile (controller/sleep.ts).
 */
import type { OperatorMetrics } from '../controller/metrics.ts';
import type { IdleSource, SleepPod } from '../controller/sleep.ts';
import type { IdleObservation } from '../controller/sleep-machine.ts';
import { A2A_PORT } from '../translate/builders/common.ts';
import { sharedAbort } from '../kube/shared-abort.ts';
import { defaultMetricsUrl, fetchMetrics, type PodLike } from './scraper.ts';
import { parsePrometheusText } from './prom.ts';

export const IDLE_METRIC = 'capsule_idle_seconds';
/** The largest agent card kept in status.sleep.agentCard (the Capsule object must stay small). */
export const MAX_CARD_BYTES = 32 << 10;
export const CARD_PATH = '/.well-known/agent-card.json';

/** One awake sleep-enabled Capsule and its ready pods, as the controller's caches have them. */
export interface IdleTarget {
  key: string;
  afterIdleSeconds: number;
  pods: PodLike[];
}

export interface IdleOptions {
  /** Per-pod request timeout (default 5000 ms). */
  timeoutMs?: number;
  /** Pods scraped at once (default 8). */
  concurrency?: number;
  /** How often due capsules are looked for (default 1000 ms). */
  tickMs?: number;
  /** The /metrics URL of a ready pod (default: its podIP and metrics port); tests point it at a real `mur serve`. */
  metricsUrl?: (pod: PodLike) => string | undefined;
  /** The agent card URL of a ready pod (default: its podIP, the a2a port and CARD_PATH); tests point it at a real `mur serve`. */
  cardUrl?: (pod: PodLike) => string | undefined;
  metrics: OperatorMetrics;
  log?: (m: string) => void;
}

/** Seconds between two scrapes of a capsule that sleeps after `afterIdleSeconds`. */
export function idleInterval(afterIdleSeconds: number): number {
  return Math.max(2, Math.min(afterIdleSeconds / 3, 30));
}

/** The least `capsule_idle_seconds` of a /metrics text (a pod exports one; the least is the safe reading), or undefined. */
export function idleSecondsOf(text: string): number | undefined {
  let least: number | undefined;
  for (const s of parsePrometheusText(text)) if (s.name === IDLE_METRIC && Number.isFinite(s.value)) least = Math.min(least ?? Infinity, s.value);
  return least;
}

export function defaultCardUrl(p: PodLike): string | undefined {
  const ip = p.status?.podIP;
  if (!ip) return undefined;
  let port = A2A_PORT;
  for (const c of p.spec?.containers ?? []) for (const x of c.ports ?? []) if (x.name === 'a2a') port = x.containerPort;
  return `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}${CARD_PATH}`;
}

export class IdleScraper implements IdleSource {
  /** Latest reading per capsule key, per pod uid. */
  private readonly seen = new Map<string, Map<string, IdleObservation>>();
  private readonly due = new Map<string, number>();
  private readonly failing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly abort = sharedAbort();
  private readonly log: (m: string) => void;

  constructor(
    private readonly targets: () => IdleTarget[],
    private readonly onIdle: (key: string) => void,
    private readonly o: IdleOptions,
  ) {
    this.log = o.log ?? (() => {});
  }

  /** The latest reading of each of `pods` (undefined where there is none) for capsule `key`. */
  readings(key: string, pods: PodLike[]): Array<IdleObservation | undefined> {
    const m = this.seen.get(key);
    return pods.map((p) => m?.get(p.metadata.uid ?? ''));
  }

  /** How old a reading of a capsule may be and still count (three intervals and a timeout). */
  staleAfterMs(afterIdleSeconds: number): number {
    return 3 * idleInterval(afterIdleSeconds) * 1000 + (this.o.timeoutMs ?? 5000);
  }

  /** The agent card JSON a ready pod serves, as served (at most MAX_CARD_BYTES); throws saying why not. */
  async fetchCard(pod: SleepPod): Promise<string> {
    const url = (this.o.cardUrl ?? defaultCardUrl)(pod);
    if (!url) throw new Error('no pod IP');
    const text = await fetchMetrics(url, this.o.timeoutMs ?? 5000, MAX_CARD_BYTES, this.abort.signal, 'application/json');
    let card: unknown;
    try {
      card = JSON.parse(text);
    } catch {
      throw new Error(`${url} did not answer JSON`);
    }
    if (!card || typeof card !== 'object' || Array.isArray(card)) throw new Error(`${url} did not answer a JSON object`);
    return text;
  }

  /** Forget a capsule's readings (it went to sleep, or is gone): a wake starts from fresh ones. */
  forget(key: string): void {
    this.seen.delete(key);
    this.due.delete(key);
  }

  start(): void {
    if (this.stopped) return;
    const schedule = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.running = this.round(Date.now())
          .catch((e: Error) => this.log(`idle scrape failed: ${e.message}`))
          .finally(() => {
            this.running = undefined;
            schedule();
          });
      }, this.o.tickMs ?? 1000);
      this.timer.unref();
    };
    schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.abort.abort();
    await this.running?.catch(() => {});
  }

  /** One round now over the capsules that are due (all of them with `all`). */
  async scrapeOnce(all = true): Promise<void> {
    while (this.running) await this.running.catch(() => {});
    const p = this.round(Date.now(), all);
    this.running = p;
    try {
      await p;
    } finally {
      this.running = undefined;
    }
  }

  private async round(now: number, all = false): Promise<void> {
    const targets = this.targets();
    const live = new Set(targets.map((t) => t.key));
    for (const k of [...this.seen.keys()]) if (!live.has(k)) this.forget(k);
    const jobs: Array<{ t: IdleTarget; pod: PodLike; url: string }> = [];
    const dueNow: IdleTarget[] = [];
    for (const t of targets) {
      if (!all && (this.due.get(t.key) ?? 0) > now) continue;
      this.due.set(t.key, now + idleInterval(t.afterIdleSeconds) * 1000);
      dueNow.push(t);
      // Readings of pods that are no longer ready are dropped.
      const uids = new Set(t.pods.map((p) => p.metadata.uid ?? ''));
      const m = this.seen.get(t.key);
      if (m) for (const u of [...m.keys()]) if (!uids.has(u)) m.delete(u);
      for (const pod of t.pods) {
        const url = (this.o.metricsUrl ?? defaultMetricsUrl)(pod);
        if (url && pod.metadata.uid) jobs.push({ t, pod, url });
      }
    }
    let next = 0;
    const worker = async () => {
      while (next < jobs.length && !this.stopped) await this.scrape(jobs[next++]!);
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.o.concurrency ?? 8, jobs.length)) }, worker));
    if (this.stopped) return;
    for (const t of dueNow) {
      const r = this.readings(t.key, t.pods);
      if (r.length && r.every((x) => x !== undefined && x.idleSeconds >= t.afterIdleSeconds)) this.onIdle(t.key);
    }
  }

  private async scrape({ t, pod, url }: { t: IdleTarget; pod: PodLike; url: string }): Promise<void> {
    const uid = pod.metadata.uid!;
    let m = this.seen.get(t.key);
    if (!m) this.seen.set(t.key, (m = new Map()));
    try {
      const idle = idleSecondsOf(await fetchMetrics(url, this.o.timeoutMs ?? 5000, 4 << 20, this.abort.signal));
      if (idle === undefined) throw new Error(`no ${IDLE_METRIC} gauge (a runtime too old to sleep)`);
      m.set(uid, { idleSeconds: idle, at: Date.now() });
      this.o.metrics.idleScrapes.inc({ result: 'ok' });
      if (this.failing.delete(uid)) this.log(`sleep: reading idle time of pod ${pod.metadata.namespace}/${pod.metadata.name} works again`);
    } catch (e) {
      // No reading, no sleep: a pod we cannot see is never assumed idle.
      m.delete(uid);
      if (this.stopped) return;
      this.o.metrics.idleScrapes.inc({ result: 'error' });
      if (!this.failing.has(uid)) {
        this.failing.add(uid);
        this.log(
          `sleep: reading idle time of pod ${pod.metadata.namespace}/${pod.metadata.name} (${url}) failed: ${(e as Error).message} (logged once until it works again)`,
        );
      }
    }
  }
}
