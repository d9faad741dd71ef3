/**
 * Token usage in `kubectl get capsule`: the operator scrapes its capsule pods.
 *
 * On its own timer (never in a reconcile), for every Capsule in the cache with ready pods, it
 * fetches each ready pod's `http://<podIP>:<metrics port>/metrics` (short timeout, a bounded number
 * at once, failures logged once per failure streak and otherwise ignored), sums
 * `capsule_tokens_total` by token_type (input and output only: cache_read/cache_write are subsets
 * of input), turns the pods' counters into a monotonic total with the rule in accumulate.ts, and
 * merge-patches `status.usage {inputTokens, outputTokens, totalTokens, observedAt, pods}` with the
 * operator's field manager — only when the total changed (or status.usage is not there yet), so at
 * most one write per Capsule per interval and none in a quiet cluster.
 *
 * The write is conditional on the resourceVersion the total was computed from (409 → re-read once
 * and retry), so a stale cache can never move the total backwards. Only the leader runs it (it
 * starts and stops with the controller). Per-pod last-seen values live in memory only.
 */
import type { Capsule, CapsuleUsage, KubeObject } from '../api/types.ts';
import { FIELD_MANAGER, LABEL_CAPSULE, LABEL_MANAGED_BY, METRICS_PORT } from '../translate/builders/common.ts';
import type { OperatorMetrics } from '../controller/metrics.ts';
import { collectionPath, isConflict, type KubeClient } from '../kube/client.ts';
import { keyOf, type Informer } from '../kube/informer.ts';
import { sharedAbort } from '../kube/shared-abort.ts';
import { podDelta, stateOf, type PodState } from './accumulate.ts';
import { parsePrometheusText, podTokens, type PodTokens } from './prom.ts';

export interface PodLike extends KubeObject {
  spec?: { containers?: Array<{ name: string; ports?: Array<{ name?: string; containerPort: number }> }> };
  status?: { phase?: string; podIP?: string; conditions?: Array<{ type: string; status: string }> };
}

export interface UsageOptions {
  /** Scrape interval in ms; 0 = off. */
  intervalMs: number;
  /** Per-pod request timeout (default 5000 ms). */
  timeoutMs?: number;
  /** Pods scraped at once (default 8). */
  concurrency?: number;
  /** Largest /metrics body read (default 4 MiB). */
  maxBytes?: number;
  /**
   * The /metrics URL of a ready pod (default `http://<podIP>:<container port "metrics", else 9090>/metrics`).
   * Tests point it at a real `mur serve`; undefined = skip the pod.
   */
  metricsUrl?: (pod: PodLike) => string | undefined;
}

export interface ScrapeReport {
  pods: number;
  ok: number;
  failed: number;
  /** Capsules whose status.usage was written in this round. */
  written: string[];
}

interface CapsuleState {
  uid: string;
  pods: Map<string, PodState>;
  /** Tokens counted from the pods but not yet in status.usage (a write failed). */
  pending: { input: number; output: number };
}

const LABEL_SELECTOR = `${LABEL_MANAGED_BY}=${FIELD_MANAGER},${LABEL_CAPSULE}`;

export function isReady(p: PodLike): boolean {
  return (
    !p.metadata.deletionTimestamp &&
    p.status?.phase === 'Running' &&
    !!p.status.podIP &&
    (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

export function defaultMetricsUrl(p: PodLike): string | undefined {
  const ip = p.status?.podIP;
  if (!ip) return undefined;
  let port = METRICS_PORT;
  for (const c of p.spec?.containers ?? []) for (const x of c.ports ?? []) if (x.name === 'metrics') port = x.containerPort;
  return `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}/metrics`;
}

const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * GET a /metrics URL (or, with `accept`, any small document: the agent card) with a timeout
 * (connect to last byte) and a size cap; `cancel` ends it early.
 */
export async function fetchMetrics(
  url: string,
  timeoutMs: number,
  maxBytes: number,
  cancel?: AbortSignal,
  accept = 'text/plain;version=0.0.4',
): Promise<string> {
  // An explicit timer, not AbortSignal.timeout(): that signal is held weakly, and in the tests (Node
  // 20, composed with AbortSignal.any) it sometimes never fired, leaving a round stuck on a pod
  // that accepts connections and never answers.
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error(`no complete answer in ${timeoutMs} ms`)), timeoutMs);
  const onCancel = () => ac.abort(new Error('scraper stopped'));
  if (cancel?.aborted) onCancel();
  cancel?.addEventListener('abort', onCancel, { once: true });
  try {
    const res = await fetch(url, { signal: ac.signal, headers: { accept } });
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new Error(`HTTP ${res.status}`);
    }
    const reader = res.body?.getReader();
    if (!reader) return '';
    const chunks: Uint8Array[] = [];
    let n = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.byteLength;
      if (n > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new Error(`body larger than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    clearTimeout(timer);
    cancel?.removeEventListener('abort', onCancel);
  }
}

async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>, stop: () => boolean): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(n, items.length)) }, async () => {
      while (i < items.length && !stop()) await fn(items[i++]!);
    }),
  );
}

export class UsageScraper {
  private readonly state = new Map<string, CapsuleState>();
  private readonly failing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ScrapeReport> | undefined;
  private stopped = false;
  private readonly abort = sharedAbort();
  private readonly since = Date.now();
  private readonly log: (m: string) => void;

  constructor(
    private readonly client: KubeClient,
    private readonly capsules: Informer<Capsule>,
    private readonly o: UsageOptions & { namespaces?: string[]; metrics: OperatorMetrics; log?: (m: string) => void },
  ) {
    this.log = o.log ?? (() => {});
  }

  /** Starts the timer (no-op when intervalMs is 0). Rounds never overlap. */
  start(): void {
    if (this.o.intervalMs <= 0 || this.stopped) return;
    const schedule = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        void this.scrapeOnce()
          .catch((e: Error) => this.log(`usage scrape failed: ${e.message}`))
          .finally(schedule);
      }, this.o.intervalMs);
      this.timer.unref();
    };
    schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.abort.abort(); // in-flight scrapes end now; no new ones start
    await this.running?.catch(() => {});
  }

  /** One round now (after the round in progress, if any). */
  async scrapeOnce(): Promise<ScrapeReport> {
    while (this.running) await this.running.catch(() => {});
    const p = this.round();
    this.running = p;
    try {
      return await p;
    } finally {
      this.running = undefined;
    }
  }

  private async listPods(): Promise<PodLike[]> {
    const paths = this.o.namespaces?.length ? this.o.namespaces.map((ns) => collectionPath('v1', 'Pod', ns)) : [collectionPath('v1', 'Pod')];
    const lists = await Promise.all(paths.map((p) => this.client.list<PodLike>(p, { labelSelector: LABEL_SELECTOR })));
    return lists.flatMap((l) => l.items);
  }

  private async round(): Promise<ScrapeReport> {
    const observedAt = rfc3339(new Date());
    const report: ScrapeReport = { pods: 0, ok: 0, failed: 0, written: [] };
    const capsules = new Map<string, Capsule>();
    for (const c of this.capsules.list()) if (!c.metadata.deletionTimestamp && c.metadata.uid) capsules.set(keyOf(c), c);
    const pods = await this.listPods();

    // Forget capsules and pods that are gone (memory stays bounded by what exists).
    const liveUids = new Set([...capsules.values()].map((c) => c.metadata.uid!));
    const livePods = new Set(pods.map((p) => p.metadata.uid ?? ''));
    for (const [uid, st] of this.state) {
      if (!liveUids.has(uid)) this.state.delete(uid);
      else for (const pu of st.pods.keys()) if (!livePods.has(pu)) st.pods.delete(pu);
    }
    for (const f of [...this.failing]) if (!livePods.has(f)) this.failing.delete(f);

    const jobs: Array<{ capsule: Capsule; pod: PodLike; url: string }> = [];
    for (const pod of pods) {
      const name = pod.metadata.labels?.[LABEL_CAPSULE];
      const c = name ? capsules.get(`${pod.metadata.namespace}/${name}`) : undefined;
      if (!c || !pod.metadata.uid || !isReady(pod)) continue;
      const url = (this.o.metricsUrl ?? defaultMetricsUrl)(pod);
      if (url) jobs.push({ capsule: c, pod, url });
    }
    report.pods = jobs.length;

    const scraped = new Map<string, Array<{ pod: PodLike; tokens: PodTokens }>>();
    await pool(
      jobs,
      this.o.concurrency ?? 8,
      async ({ capsule, pod, url }) => {
        const podKey = keyOf(pod);
        try {
          const tokens = podTokens(parsePrometheusText(await fetchMetrics(url, this.o.timeoutMs ?? 5000, this.o.maxBytes ?? 4 << 20, this.abort.signal)));
          report.ok++;
          this.o.metrics.usageScrapes.inc({ result: 'ok' });
          if (this.failing.delete(pod.metadata.uid!)) this.log(`usage: scraping pod ${podKey} works again`);
          const k = keyOf(capsule);
          if (!scraped.has(k)) scraped.set(k, []);
          scraped.get(k)!.push({ pod, tokens });
        } catch (e) {
          if (this.stopped) return;
          report.failed++;
          this.o.metrics.usageScrapes.inc({ result: 'error' });
          if (!this.failing.has(pod.metadata.uid!)) {
            this.failing.add(pod.metadata.uid!);
            this.log(`usage: scraping pod ${podKey} (${url}) failed: ${(e as Error).message} (logged once until it works again)`);
          }
        }
      },
      () => this.stopped,
    );

    for (const [key, results] of scraped) {
      // The cache may have moved on while the pods were scraped (e.g. reconcile wrote status).
      const fresh = this.capsules.get(key);
      const c = fresh && fresh.metadata.uid === capsules.get(key)!.metadata.uid ? fresh : capsules.get(key)!;
      const uid = c.metadata.uid!;
      let st = this.state.get(uid);
      if (!st) this.state.set(uid, (st = { uid, pods: new Map(), pending: { input: 0, output: 0 } }));
      const seenAt = c.status?.usage?.observedAt ? Date.parse(c.status.usage.observedAt) : undefined;
      const ctx = { ...(seenAt !== undefined && !Number.isNaN(seenAt) ? { observedAtMs: seenAt } : {}), sinceMs: this.since };
      for (const { pod, tokens } of results) {
        const d = podDelta(st.pods.get(pod.metadata.uid!), tokens, ctx);
        if (d.reason === 'restart') this.log(`usage: pod ${keyOf(pod)} restarted its counters; counting its new values from 0`);
        st.pods.set(pod.metadata.uid!, stateOf(tokens));
        st.pending.input += d.input;
        st.pending.output += d.output;
      }
      if (st.pending.input === 0 && st.pending.output === 0 && c.status?.usage) continue; // unchanged: no write
      if (this.stopped) continue;
      try {
        if (await this.write(c, st, observedAt, results.length)) report.written.push(key);
      } catch (e) {
        this.log(`usage: writing status.usage of ${key} failed (kept for the next round): ${(e as Error).message}`);
      }
    }
    return report;
  }

  /** Conditional merge patch of status.usage = what the server has + pending; 409 → re-read once. */
  private async write(c: Capsule, st: CapsuleState, observedAt: string, pods: number): Promise<boolean> {
    let cur: Capsule | undefined = c;
    for (let attempt = 0; ; attempt++) {
      if (!cur || cur.metadata.uid !== st.uid || cur.metadata.deletionTimestamp) return false;
      const base = cur.status?.usage;
      const inputTokens = (base?.inputTokens ?? 0) + st.pending.input;
      const outputTokens = (base?.outputTokens ?? 0) + st.pending.output;
      const usage: CapsuleUsage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, observedAt, pods };
      try {
        const out = await this.client.mergePatchStatus<Capsule>(cur, { usage }, { fieldManager: FIELD_MANAGER, resourceVersion: cur.metadata.resourceVersion });
        this.o.metrics.writes.inc({ verb: 'usage' });
        st.pending = { input: 0, output: 0 };
        this.capsules.offer({ ...out, apiVersion: c.apiVersion, kind: c.kind });
        return true;
      } catch (e) {
        if (!isConflict(e) || attempt > 0) throw e;
        cur = await this.client.get<Capsule>(`${collectionPath(c.apiVersion, c.kind, c.metadata.namespace)}/${encodeURIComponent(c.metadata.name)}`);
      }
    }
  }
}
