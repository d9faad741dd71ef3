/**
 * The controller's side of sleeping Capsules (docs/operator.md, "Sleeping Capsules"): what it
 * watches and what it writes when the state machine (sleep-machine.ts) says to move.
 *
 * Watched: the WakeRequested Events the activator creates on a Capsule (field selector
 * `reason=WakeRequested,source=capsule-activator`, in the watched namespaces), and the
 * EndpointSlices of the activator's own Service (its pod IPs: the `<capsule>-activator` slice's
 * endpoints). Both only enqueue Capsules; every decision is taken in the Capsule's reconcile, one
 * at a time per Capsule (the work queue), from the caches and the idle readings.
 *
 * Written on a move, BEFORE the objects are rendered for the new state (the status is the state:
 * a failed apply is retried from it, never from memory):
 * - sleep: the agent card GET from a ready pod → status {phase: Sleeping, sleep: {since,
 *   agentCard}}, Event `Sleeping`; the re-render then makes the activator's slice ready and the
 *   Deployment's replicas 0 in that order (controller.ts applies every other object before the
 *   Deployment), so callers reach the activator before the pods go;
 * - wake: status {phase: Waking, sleep.lastWake: when the first request arrived}, Event `Waking`;
 *   the re-render brings back spec.replicas;
 * - ready: status {phase: Ready, sleep without since/agentCard}, counts the wake and its latency
 *   (capsule_operator_wakes_total, capsule_operator_wake_seconds: lastWake → a ready pod).
 * spec.replicas is never written: /scale and an HPA keep owning it.
 *
 * Kept current on every reconcile, before any move: status.sleep.apiKeyDigests, the digests of the
 * API keys of a Capsule that takes them, while it may sleep or is not awake (the activator checks
 * callers against them, operator/activator/auth.ts). They stay while it is awake and sleep-enabled,
 * so a caller the activator still receives right after a wake is not refused; a Secret rotation
 * (the Secret informer re-queues the Capsules naming it) replaces them, asleep or not.
 */
import type { Capsule, CapsuleStatus, KubeObject } from '../api/types.ts';
import { stableJson } from '../translate/builders/common.ts';
import { collectionPath, type KubeClient } from '../kube/client.ts';
import { Informer, keyOf } from '../kube/informer.ts';
import type { SleepStatus } from '../reconcile/status.ts';
import { effectiveSleep, formatDuration, type SleepInput, type SleepPolicy, type TranslateResult } from '../translate/index.ts';
import type { TranslateOptions } from '../translate/options.ts';
import type { OperatorMetrics } from './metrics.ts';
import { type IdleObservation, nextSleepAction, type SleepAction, type SleepState } from './sleep-machine.ts';
import { sleepEvent, type StatusContext } from './status-writes.ts';

/** What the controller keeps of a capsule pod (controller.ts's pod informer). */
export interface SleepPod extends KubeObject {
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: NonNullable<import('../reconcile/status.ts').PodLike['status']>['containerStatuses'];
  };
}

/** The idle readings and the card fetch (operator/usage/idle.ts, given by operator.ts: the controller's layer cannot import it). */
export interface IdleSource {
  readings(key: string, pods: SleepPod[]): Array<IdleObservation | undefined>;
  staleAfterMs(afterIdleSeconds: number): number;
  forget(key: string): void;
  /** The agent card JSON of a ready pod (≤ 32 KiB); throws saying why not. */
  fetchCard(pod: SleepPod): Promise<string>;
}

/** A WakeRequested Event, as much as is kept of it. */
interface WakeEvent extends KubeObject {
  involved: { namespace: string; name: string; uid?: string };
  /** ms: when the request it reports arrived (first) and was last repeated (last). */
  first: number;
  last: number;
}

interface SliceInfo extends KubeObject {
  ips: string[];
}

export const WAKE_FIELD_SELECTOR = 'reason=WakeRequested,source=capsule-activator';

export const isPodReady = (p: SleepPod): boolean =>
  !p.metadata.deletionTimestamp &&
  p.status?.phase === 'Running' &&
  !!p.status.podIP &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

const ms = (t: unknown): number | undefined => {
  const v = typeof t === 'string' ? Date.parse(t) : Number.NaN;
  return Number.isNaN(v) ? undefined : v;
};

/** The sleep state a Capsule's status records. */
export const sleepStateOf = (c: Capsule): SleepState => (c.status?.phase === 'Sleeping' ? 'Sleeping' : c.status?.phase === 'Waking' ? 'Waking' : 'Awake');

export interface SleepOptions {
  namespaces?: string[] | undefined;
  translate: TranslateOptions;
  /** The controller's caches and writes. */
  capsules: Informer<Capsule>;
  pods: Informer<SleepPod>;
  ctx: StatusContext;
  /** The activator's Service; absent: no activator, nothing to watch (no Capsule sleeps). */
  activatorService?: { namespace: string; name: string } | undefined;
  metrics: OperatorMetrics;
  enqueue: (key: string) => void;
  log: (m: string) => void;
  /** The digests of the API keys a Capsule takes (controller/secret-info.ts); undefined: none, or the operator has no activator key. */
  apiKeyDigests?: (c: Capsule) => string[] | undefined;
}

/** What the controller keeps of a capsule pod: names, config hash, container statuses, IP and readiness. */
// biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
export const podInfo = (o: any): SleepPod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: o.metadata.name,
    namespace: o.metadata.namespace,
    uid: o.metadata.uid,
    labels: o.metadata.labels,
    annotations: o.metadata.annotations,
    deletionTimestamp: o.metadata.deletionTimestamp,
  },
  status: {
    phase: o.status?.phase,
    podIP: o.status?.podIP,
    // biome-ignore lint/suspicious/noExplicitAny: a pod condition as the API server sent it
    conditions: (o.status?.conditions ?? []).filter((c: any) => c.type === 'Ready').map((c: any) => ({ type: c.type, status: c.status })),
    containerStatuses: o.status?.containerStatuses,
  },
});

export class SleepControl {
  readonly wakeEvents: Informer<WakeEvent> | undefined;
  readonly activatorSlices: Informer<SliceInfo> | undefined;
  idle: IdleSource | undefined;
  private ips: string[] = [];
  /** Capsules whose card fetch failed, so the Warning Event is written once per failure streak. */
  private readonly cardFailing = new Set<string>();
  /**
   * Per Capsule, the WakeRequested Events (name@resourceVersion) its wakes answered. Event times
   * are whole seconds, so an Event from the second the Capsule next went to sleep in still passes
   * the `since` floor below; without this, a Capsule back asleep within that second (an idle time
   * of seconds, or a runtime that reported long idle) was woken again by the Event it had answered.
   */
  private readonly answered = new Map<string, Set<string>>();

  constructor(
    private readonly client: KubeClient,
    private readonly o: SleepOptions,
  ) {
    const svc = o.activatorService;
    if (!svc) return;
    const paths = o.namespaces?.length ? o.namespaces.map((ns) => collectionPath('v1', 'Event', ns)) : [collectionPath('v1', 'Event')];
    this.wakeEvents = new Informer<WakeEvent>(client, 'wake-events', paths, {
      log: o.log,
      fieldSelector: WAKE_FIELD_SELECTOR,
      transform: wakeEvent,
      indexBy: (e) => (e.involved.name ? `${e.involved.namespace}/${e.involved.name}` : undefined),
    }).on((t, e) => {
      if (t !== 'DELETED' && e.involved.name) o.enqueue(`${e.involved.namespace}/${e.involved.name}`);
    });
    this.activatorSlices = new Informer<SliceInfo>(
      client,
      'activator-endpointslices',
      [collectionPath('discovery.k8s.io/v1', 'EndpointSlice', svc.namespace)],
      {
        log: o.log,
        labelSelector: `kubernetes.io/service-name=${svc.name}`,
        transform: sliceInfo,
      },
    ).on(() => this.onSlices());
  }

  // biome-ignore lint/suspicious/noExplicitAny: informers of different object types in one list
  informers(): Informer<any>[] {
    return [this.wakeEvents, this.activatorSlices].filter((i) => i !== undefined);
  }

  /** Ready activator pod IPs (sorted): the `<capsule>-activator` slice's endpoints. */
  activatorIPs(): string[] {
    return this.ips;
  }

  private onSlices(): void {
    const ips = [...new Set(this.activatorSlices!.list().flatMap((s) => s.ips))].sort();
    if (ips.join(',') === this.ips.join(',')) return;
    this.ips = ips;
    this.o.log(`activator endpoints: ${ips.length ? ips.join(', ') : 'none ready'}`);
    // Every Capsule that sleeps or may: its slice holds these IPs.
    for (const c of this.o.capsules.store.values())
      if (sleepStateOf(c) !== 'Awake' || effectiveSleep(c, this.o.translate).afterIdleSeconds !== null) this.o.enqueue(keyOf(c));
  }

  /** The ready pods of a Capsule (pod readiness is what the Service's endpoints follow; the Deployment's readyReplicas lags by a status update). */
  readyPods(key: string): SleepPod[] {
    return this.o.pods.indexed(key).filter(isPodReady);
  }

  /** The sleep state as it stands, for translate. */
  inputOf(c: Capsule): SleepInput {
    const state = sleepStateOf(c);
    return { phase: state, readyPods: state === 'Sleeping' ? 0 : this.readyPods(keyOf(c)).length, activatorIPs: this.ips };
  }

  /** The Sleeping condition of `c` in its current state (stable messages: the status is written only when they change; the Events say the details). */
  statusOf(c: Capsule, policy: SleepPolicy = effectiveSleep(c, this.o.translate)): SleepStatus {
    const state = sleepStateOf(c);
    const after = policy.afterIdleSeconds;
    if (state === 'Sleeping')
      return {
        state,
        reason: 'Idle',
        message: `asleep${after !== null ? ` after ${formatDuration(after)} idle` : ''}: the activator serves the agent card and wakes the capsule on the first request`,
      };
    if (state === 'Waking') return { state, reason: 'WakeRequested', message: 'waking: a request is held until a pod is ready' };
    return { state, reason: policy.reason, message: policy.message };
  }

  /**
   * `render` (translate) for the state as it stands and, when nothing fatal stops it, the move the
   * state machine asks for (written to status first), then `render` again for the new state.
   */
  async move(
    c: Capsule,
    render: (capsule: Capsule, sleep: SleepInput) => TranslateResult,
  ): Promise<{ capsule: Capsule; r: TranslateResult; sleep: SleepStatus }> {
    const policy = effectiveSleep(c, this.o.translate);
    c = await this.keepDigests(c, policy);
    let r = render(c, this.inputOf(c));
    let capsule = c;
    if (!r.problems.some((p) => p.fatal)) {
      const step = await this.step(c, policy, this.readyPods(keyOf(c)));
      capsule = step.capsule;
      if (step.input.phase !== sleepStateOf(c)) r = render(capsule, step.input);
    }
    return { capsule, r, sleep: this.statusOf(capsule, policy) };
  }

  /** status.sleep.apiKeyDigests as they should be now, written when they are not (see the file comment). */
  private async keepDigests(c: Capsule, policy: SleepPolicy): Promise<Capsule> {
    const mayServe = policy.afterIdleSeconds !== null || sleepStateOf(c) !== 'Awake';
    const want = mayServe ? this.o.apiKeyDigests?.(c) : undefined;
    const have = c.status?.sleep?.apiKeyDigests;
    if (stableJson(want ?? null) === stableJson(have ?? null)) return c;
    return this.write(c, { sleep: { apiKeyDigests: want ?? null } });
  }

  /** Awake sleep-enabled Capsules and their ready pods: what the idle scraper reads (operator/usage/idle.ts). */
  idleTargets(): Array<{ key: string; afterIdleSeconds: number; pods: SleepPod[] }> {
    const out: Array<{ key: string; afterIdleSeconds: number; pods: SleepPod[] }> = [];
    for (const c of this.o.capsules.store.values()) {
      if (c.metadata.deletionTimestamp || sleepStateOf(c) !== 'Awake') continue;
      const after = effectiveSleep(c, this.o.translate).afterIdleSeconds;
      const pods = after === null ? [] : this.readyPods(keyOf(c));
      if (after !== null && pods.length) out.push({ key: keyOf(c), afterIdleSeconds: after, pods });
    }
    return out;
  }

  /** WakeRequested Events on `c` since it went to sleep (`since`, seconds-truncated: Event times may be whole seconds), oldest first. */
  private wakeRequests(c: Capsule): WakeEvent[] {
    const since = ms(c.status?.sleep?.since);
    if (!this.wakeEvents || since === undefined) return [];
    const floor = Math.floor(since / 1000) * 1000;
    const key = keyOf(c);
    const events = this.wakeEvents.indexed(key).filter((e) => (!e.involved.uid || e.involved.uid === c.metadata.uid) && e.last >= floor);
    // An answered Event that no longer passes the floor need not be remembered.
    const answered = this.answered.get(key);
    if (answered) {
      const still = new Set(events.map(eventId).filter((id) => answered.has(id)));
      if (still.size) this.answered.set(key, still);
      else this.answered.delete(key);
    }
    return events.filter((e) => !answered?.has(eventId(e))).sort((a, b) => a.first - b.first);
  }

  /**
   * The state machine's action for `c` now, carried out. Returns the Capsule as written and what
   * translate renders for its state. `readyPods`: the capsule's ready pods (pod readiness is what
   * the Service's endpoints follow; the Deployment's readyReplicas lags by a status update).
   */
  private async step(c: Capsule, policy: SleepPolicy, readyPods: SleepPod[]): Promise<{ capsule: Capsule; input: SleepInput; action: SleepAction }> {
    const { ctx } = this.o;
    const key = keyOf(c);
    const state = sleepStateOf(c);
    const requests = state === 'Sleeping' ? this.wakeRequests(c) : [];
    const now = Date.now();
    const action = nextSleepAction({
      afterIdleSeconds: policy.afterIdleSeconds,
      policyReason: policy.reason,
      policyMessage: policy.message,
      state,
      readyPods: readyPods.length,
      idle: this.idle && policy.afterIdleSeconds !== null ? this.idle.readings(key, readyPods) : [],
      staleAfterMs: policy.afterIdleSeconds !== null && this.idle ? this.idle.staleAfterMs(policy.afterIdleSeconds) : 0,
      activatorReady: this.ips.length > 0,
      wakeRequests: requests.length,
      now,
    });
    let out = c;
    let next: SleepState = state;
    if (action.kind === 'sleep') {
      const card = await this.card(c, readyPods);
      if (card !== undefined) {
        out = await this.write(c, { phase: 'Sleeping', sleep: { since: new Date(now).toISOString(), agentCard: card } });
        await sleepEvent(ctx, out, 'Sleeping', action.message);
        this.o.metrics.sleeps.inc();
        this.idle?.forget(key);
        next = 'Sleeping';
      }
    } else if (action.kind === 'wake') {
      const at = requests[0] ? Math.max(requests[0].first, ms(c.status?.sleep?.since) ?? 0) : now;
      out = await this.write(c, { phase: 'Waking', sleep: { lastWake: new Date(at).toISOString() } });
      this.answered.set(key, new Set([...(this.answered.get(key) ?? []), ...requests.map(eventId)]));
      await sleepEvent(ctx, out, 'Waking', action.message);
      next = 'Waking';
    } else if (action.kind === 'ready') {
      out = await this.write(c, { phase: 'Ready', sleep: { since: null, agentCard: null } });
      this.o.metrics.wakes.inc();
      const asked = ms(c.status?.sleep?.lastWake);
      if (asked !== undefined) this.o.metrics.wakeSeconds.observe(Math.max(0, now - asked) / 1000);
      next = 'Awake';
    }
    // While asleep the slice says "no ready pod" even as the last pods drain: callers must reach
    // the activator before the pods go (its endpoints are ready exactly when readyPods is 0).
    const input: SleepInput = {
      phase: next,
      readyPods: next === 'Sleeping' ? 0 : readyPods.length,
      activatorIPs: this.ips,
    };
    return { capsule: out, input, action };
  }

  /** The card of the first ready pod that gives one; a Warning Event (once per failure streak) when none does: no sleep then. */
  private async card(c: Capsule, pods: SleepPod[]): Promise<string | undefined> {
    const ctx = this.o.ctx;
    const key = keyOf(c);
    const errors: string[] = [];
    for (const pod of pods) {
      try {
        const card = await this.idle!.fetchCard(pod);
        if (this.cardFailing.delete(key)) ctx.log(`sleep: ${key}: the agent card answers again`);
        return card;
      } catch (e) {
        errors.push(`pod ${pod.metadata.name}: ${(e as Error).message}`);
      }
    }
    if (!this.cardFailing.has(key)) {
      this.cardFailing.add(key);
      await sleepEvent(
        ctx,
        c,
        'SleepDeferred',
        `idle, but the agent card could not be read to serve while asleep (${errors.join('; ') || 'no ready pod'}); staying awake and trying again on the next idle reading [E-OP-073]`,
        'Warning',
      );
    }
    return undefined;
  }

  private async write(c: Capsule, status: Record<string, unknown>): Promise<Capsule> {
    const { ctx, capsules } = this.o;
    await ctx.beforeWrite?.(c);
    // Conditional on the version the decision was taken from: a Capsule changed meanwhile (409) is
    // reconciled again from the fresh version.
    const out = await ctx.client.mergePatchStatus<Capsule>(c, status as Partial<CapsuleStatus>, { resourceVersion: c.metadata.resourceVersion });
    ctx.metrics.writes.inc({ verb: 'status' });
    const typed = { ...out, apiVersion: c.apiVersion, kind: c.kind };
    capsules.offer(typed);
    return typed as Capsule;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
function wakeEvent(o: any): WakeEvent {
  const first = ms(o.eventTime) ?? ms(o.firstTimestamp) ?? ms(o.metadata?.creationTimestamp) ?? 0;
  const last = Math.max(first, ms(o.series?.lastObservedTime) ?? ms(o.lastTimestamp) ?? 0);
  const io = o.involvedObject ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: o.metadata.name, namespace: o.metadata.namespace, resourceVersion: o.metadata.resourceVersion },
    involved: io.kind === 'Capsule' ? { namespace: io.namespace ?? o.metadata.namespace, name: io.name, uid: io.uid } : { namespace: '', name: '' },
    first,
    last,
  };
}

/** One version of one Event: an Event the activator updated again is a new request. */
const eventId = (e: WakeEvent): string => `${e.metadata.name}@${e.metadata.resourceVersion ?? ''}`;

// biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
function sliceInfo(o: any): SliceInfo {
  const ips: string[] = [];
  // `ready` unset means ready (discovery.k8s.io/v1: consumers should treat nil as ready).
  for (const e of o.endpoints ?? []) if (e?.conditions?.ready !== false) ips.push(...(e.addresses ?? []));
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: o.metadata.name, namespace: o.metadata.namespace, resourceVersion: o.metadata.resourceVersion },
    ips,
  };
}
