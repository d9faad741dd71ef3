/**
 * The Capsule controller: informers (Capsules, Hooks, Secrets, and the objects it owns), a keyed
 * work queue, and a thin reconcile = translate → apply → prune → status. Everything it decides
 * comes from the pure translate function; this file only moves objects. The writes themselves are
 * in apply.ts (owned objects) and status-writes.ts (status and Events); which Capsules depend on
 * which, for the events to fan out, in dependents.ts.
 */
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { Capsule, Hook, KubeObject, SecretInfo, ServiceInfo } from '../api/types.ts';
import { FIELD_MANAGER, LABEL_CAPSULE, LABEL_MANAGED_BY, stableJson } from '../translate/builders/common.ts';
import { ApiError, collectionPath, type KubeClient } from '../kube/client.ts';
import { Informer, keyOf } from '../kube/informer.ts';
import { carryVerdict, ownedEntry, type OwnedEntry } from '../reconcile/owned-cache.ts';
import { RefusalsMemo } from '../reconcile/refusals-memo.ts';
import type { SleepStatus } from '../reconcile/status.ts';
import { translate, type TranslateResult } from '../translate/index.ts';
import { mcpSecretNames, mcpServiceKeys, serviceInfo } from '../translate/mcp.ts';
import type { TranslateOptions } from '../translate/options.ts';
import { ensure, prune, WriteRefused } from './apply.ts';
import { Dependents } from './dependents.ts';
import { apiKeyDigestsOf, secretInfo } from './secret-info.ts';
import type { OperatorMetrics } from './metrics.ts';
import { WorkQueue } from './queue.ts';
import { podInfo, SleepControl, type SleepPod } from './sleep.ts';
import { reportCapsule, reportHook, tellUnwatched, type StatusContext } from './status-writes.ts';

export interface ControllerOptions {
  /** Namespaces to watch; empty or undefined = all. */
  namespaces?: string[];
  translate: TranslateOptions;
  workers?: number;
  resyncMs?: number;
  metrics: OperatorMetrics;
  identity?: string;
  log?: (msg: string) => void;
  /**
   * With `namespaces`: watch Capsules cluster-wide when RBAC allows (default true), telling the
   * ones outside `namespaces` that they are not watched; false: one Capsule watch per namespace.
   */
  clusterCapsules?: boolean;
  /** Test seam: awaited before each object write (lets a test kill the operator mid-reconcile). */
  beforeWrite?: (obj: KubeObject) => Promise<void> | void;
  /** The activator's Service (activator-config.ts): its EndpointSlices give the activator's pod IPs. Absent: no Capsule sleeps. */
  activatorService?: { namespace: string; name: string };
  /**
   * The activator key (activator/key.ts): with it, a Capsule that takes API keys and may sleep
   * shows their digests in status.sleep.apiKeyDigests, for the activator to check callers with.
   */
  activatorKey?: Uint8Array;
}

/** Queue keys of Hooks (status only) carry this prefix; Capsule keys are plain `namespace/name`. */
const HOOK_KEY = 'Hook:';
/** Queue keys of Capsules outside the watched namespaces (an Event only: unwatched.ts). */
const UNWATCHED_KEY = 'Unwatched:';

/** Kinds the controller creates, in apply order. */
export const OWNED_KINDS: Array<[string, string]> = [
  ['v1', 'ServiceAccount'],
  ['v1', 'ConfigMap'],
  ['v1', 'Service'],
  ['networking.k8s.io/v1', 'NetworkPolicy'],
  ['policy/v1', 'PodDisruptionBudget'],
  ['v1', 'PersistentVolumeClaim'],
  ['discovery.k8s.io/v1', 'EndpointSlice'],
  ['apps/v1', 'Deployment'],
];

/** True when two versions of a Capsule differ in status.usage (and bookkeeping metadata) only. */
export function onlyUsageChanged(a: Capsule, b: Capsule): boolean {
  const norm = (c: Capsule) =>
    stableJson({
      ...c,
      metadata: { ...c.metadata, resourceVersion: undefined, managedFields: undefined },
      status: c.status ? { ...c.status, usage: undefined } : undefined,
    });
  return norm(a) === norm(b);
}

export class CapsuleController {
  readonly capsules: Informer<Capsule>;
  readonly hooks: Informer<Hook>;
  readonly secrets: Informer<SecretInfo & KubeObject>;
  /** Services (selector and ports only): where the pods of an MCP server a Capsule names are (translate/mcp.ts). */
  readonly services: Informer<ServiceInfo & KubeObject>;
  readonly owned = new Map<string, Informer<OwnedEntry>>();
  /** The capsules' pods (sleep.ts podInfo): a runtime that exits at start shows in status; sleep counts the ready ones. */
  readonly pods: Informer<SleepPod>;
  /** Sleeping Capsules: wake Events, the activator's endpoints, the moves (sleep.ts). */
  readonly sleep: SleepControl;
  readonly queue = new WorkQueue({ baseDelayMs: 200, maxDelayMs: 60_000 });
  /** Which Capsules name which as peers, their ports and token-taking (dependents.ts). */
  private readonly dependents = new Dependents();
  /** The runtime validator's verdict per Capsule, rerun only when its rendered murmur.yaml changes. */
  readonly refusals = new RefusalsMemo();
  private resync: NodeJS.Timeout | undefined;
  private workers: Promise<void> | undefined;
  private started = false;
  private stopping = false;
  private readonly log: (msg: string) => void;
  /** What the writes (apply.ts, status-writes.ts) go through. */
  private readonly writes: StatusContext;
  /** Keys of each resync pass in progress; `resync-done` is emitted when the last one is handled. */
  private passes: Array<{ keys: Set<string>; done: () => void }> = [];
  /** `resync-done` (count) after every full pass; `reconciled` (key) after each reconcile. */
  readonly events = new EventEmitter();
  resyncsCompleted = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly o: ControllerOptions,
  ) {
    this.log = o.log ?? (() => {});
    this.writes = { client, metrics: o.metrics, beforeWrite: o.beforeWrite, identity: o.identity ?? hostname(), log: this.log };
    const paths = (apiVersion: string, kind: string) =>
      o.namespaces?.length ? o.namespaces.map((ns) => collectionPath(apiVersion, kind, ns)) : [collectionPath(apiVersion, kind)];
    const io = { log: this.log };
    // List items come without apiVersion/kind; put them back so cached objects are complete.
    // managedFields of Capsules and Hooks are never read: not kept (memory, bench/operator.ts).
    // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
    const typed = (apiVersion: string, kind: string) => (o: any) => ({ ...o, apiVersion, kind, metadata: { ...o.metadata, managedFields: undefined } });
    // Owned objects: the metadata prune needs, a Deployment's rollout state, and the fields our
    // apply set only until the no-op check has answered (owned-cache.ts; memory per Capsule,
    // bench/operator.ts).
    // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
    const ownedTyped = (apiVersion: string, kind: string) => (o: any) => ownedEntry({ ...o, apiVersion, kind }, FIELD_MANAGER);
    // Capsules outside the watched namespaces only arrive on a cluster-wide watch (start() picks
    // one when RBAC allows): they are kept apart and told they are not watched.
    const watched = new Set(o.namespaces ?? []);
    const keep = (c: Capsule) => !watched.size || watched.has(c.metadata.namespace ?? '');
    this.capsules = new Informer<Capsule>(client, 'capsules', paths('murmur.io/v1alpha1', 'Capsule'), {
      ...io,
      transform: typed('murmur.io/v1alpha1', 'Capsule'),
      keep,
    })
      .on((t, c, old) => this.onCapsule(t, c, old))
      .onSkipped((t, c) => {
        if (t === 'ADDED') this.enqueue(UNWATCHED_KEY + keyOf(c));
      });
    this.hooks = new Informer<Hook>(client, 'hooks', paths('murmur.io/v1alpha1', 'Hook'), { ...io, transform: typed('murmur.io/v1alpha1', 'Hook') }).on(
      (t, h, old) => this.onHook(t, h, old),
    );
    this.secrets = new Informer<SecretInfo & KubeObject>(client, 'secrets', paths('v1', 'Secret'), { ...io, transform: secretInfo(o.activatorKey) }).on(
      (_t, s) => this.onSecret(s),
    );
    this.services = new Informer<ServiceInfo & KubeObject>(client, 'services', paths('v1', 'Service'), {
      ...io,
      // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
      transform: (o: any) => ({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: o.metadata.name, namespace: o.metadata.namespace, resourceVersion: o.metadata.resourceVersion },
        ...serviceInfo(o),
      }),
    }).on((_t, s) => this.onService(s));
    // Owned objects and pods indexed by their Capsule (label): prune and status read a capsule's own.
    const byCapsule = (o: KubeObject) => {
      const owner = o.metadata.labels?.[LABEL_CAPSULE];
      return owner && o.metadata.namespace ? `${o.metadata.namespace}/${owner}` : undefined;
    };
    for (const [av, kind] of OWNED_KINDS) {
      const inf = new Informer<OwnedEntry>(client, kind, paths(av, kind), {
        ...io,
        labelSelector: `${LABEL_MANAGED_BY}=${FIELD_MANAGER}`,
        transform: ownedTyped(av, kind),
        indexBy: byCapsule,
      });
      inf.on((_t, obj, old) => {
        carryVerdict(obj, old);
        const owner = obj.metadata.labels?.[LABEL_CAPSULE];
        if (owner && obj.metadata.namespace) this.enqueue(`${obj.metadata.namespace}/${owner}`);
      });
      this.owned.set(kind, inf);
    }
    this.pods = new Informer<SleepPod>(client, 'pods', paths('v1', 'Pod'), {
      ...io,
      labelSelector: `${LABEL_MANAGED_BY}=${FIELD_MANAGER}`,
      transform: podInfo,
      indexBy: byCapsule,
    });
    this.pods.on((_t, pod) => {
      const owner = pod.metadata.labels?.[LABEL_CAPSULE];
      if (owner && pod.metadata.namespace) this.enqueue(`${pod.metadata.namespace}/${owner}`);
    });
    this.sleep = new SleepControl(client, {
      ...o,
      capsules: this.capsules,
      pods: this.pods,
      ctx: this.writes,
      enqueue: (k) => this.enqueue(k),
      log: this.log,
      apiKeyDigests: (c) => (o.activatorKey ? apiKeyDigestsOf(c, this.secrets) : undefined),
    });
  }

  // biome-ignore lint/suspicious/noExplicitAny: informers of different object types in one list; only their common methods are called
  private informers(): Informer<any>[] {
    return [this.capsules, this.hooks, this.secrets, this.services, ...this.owned.values(), this.pods, ...this.sleep.informers()];
  }

  get synced(): boolean {
    return this.started && this.informers().every((i) => i.synced);
  }

  enqueue(key: string): void {
    this.queue.add(key);
    this.o.metrics.queueDepth.set(this.queue.length);
  }

  // ---- event handlers -------------------------------------------------------------------------

  private onCapsule(type: string, c: Capsule, old: Capsule | undefined): void {
    // A write of status.usage alone (the usage scraper's) changes nothing reconcile looks at.
    if (type === 'MODIFIED' && old && onlyUsageChanged(old, c)) return;
    const key = keyOf(c);
    const ns = c.metadata.namespace ?? 'default';
    const { before, after, moved } = this.dependents.update(key, ns, type === 'DELETED' ? undefined : c.spec, this.o.translate.clusterDomain);
    if (type === 'DELETED') this.refusals.forget(key);
    this.o.metrics.capsules.set(this.capsules.store.size);

    this.enqueue(key);
    // The Hooks it names (or named) list their users in status.
    const hookRefs = (x: Capsule | undefined) => (x?.spec.hooks ?? []).map((r) => r.name);
    const hookChanged = type !== 'MODIFIED' || stableJson(hookRefs(old)) !== stableJson(hookRefs(c));
    if (hookChanged) for (const h of new Set([...hookRefs(old), ...hookRefs(c)])) this.enqueue(`${HOOK_KEY}${ns}/${h}`);
    // A callee's ingress policy lists its callers: tell the ones that were added or dropped.
    for (const t of before) if (!after.has(t)) this.enqueue(t);
    for (const t of after) if (!before.has(t)) this.enqueue(t);
    // Callers render this capsule's URL (and recognise its Service name): tell them when it
    // appears, disappears or moves port.
    if (type !== 'MODIFIED' || moved || !old) for (const caller of this.dependents.callers(key)) this.enqueue(caller);
  }

  private onHook(type: string, h: Hook, old: Hook | undefined): void {
    // Its status (ours) or metadata changed, not its spec: nothing that Capsules render.
    if (type === 'MODIFIED' && old && old.metadata.generation === h.metadata.generation) return;
    const ns = h.metadata.namespace;
    this.enqueue(HOOK_KEY + keyOf(h));
    for (const c of this.capsules.store.values())
      if (c.metadata.namespace === ns && c.spec.hooks?.some((r) => r.name === h.metadata.name)) this.enqueue(keyOf(c));
  }

  private onSecret(s: KubeObject): void {
    const ns = s.metadata.namespace;
    // The operator-wide OTLP headers Secret concerns every capsule of its namespace.
    const otlp = this.o.translate.otlp?.headersSecret?.name === s.metadata.name;
    for (const c of this.capsules.store.values())
      if (
        c.metadata.namespace === ns &&
        (otlp ||
          c.spec.inference?.apiKeySecretRef?.name === s.metadata.name ||
          c.spec.a2a?.auth?.apiKeys?.secretName === s.metadata.name ||
          c.spec.store?.postgres?.urlSecretRef.name === s.metadata.name ||
          mcpSecretNames(c.spec).includes(s.metadata.name))
      )
        this.enqueue(keyOf(c));
  }

  /** A Service an MCP server names appeared, moved its pods or ports, or went: its egress rule follows. */
  private onService(s: KubeObject): void {
    const key = keyOf(s);
    for (const c of this.capsules.store.values())
      if (c.spec.mcp && mcpServiceKeys(c.metadata.namespace ?? 'default', c.spec).includes(key)) this.enqueue(keyOf(c));
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  async start(): Promise<void> {
    await this.scopeCapsules();
    if (this.stopping) return;
    for (const i of this.informers()) i.start();
    // No deadline: the informers retry until the API server answers, and /readyz says not ready
    // meanwhile; a deadline only turned an outage at start-up into an operator that never reconciles.
    for (const i of this.informers()) await i.waitForSync(Infinity);
    this.started = true;
    for (const c of this.capsules.store.values()) this.enqueue(keyOf(c));
    for (const h of this.hooks.store.values()) this.enqueue(HOOK_KEY + keyOf(h));
    this.workers = this.queue.run(this.o.workers ?? 4, (k) => this.reconcile(k));
    const every = this.o.resyncMs ?? 300_000;
    if (every > 0) {
      this.resync = setInterval(() => void this.resyncNow(), every);
      this.resync.unref();
    }
    this.log(`controller started: ${this.capsules.store.size} capsules in cache`);
    await this.reportUnwatched();
  }

  /**
   * A full pass: every Capsule and Hook queued; resolves when each has been reconciled once
   * (tests wait for this event instead of sleeping through resync periods).
   */
  resyncNow(): Promise<number> {
    const keys = new Set<string>([
      ...[...this.capsules.store.values()].map((c) => keyOf(c)),
      ...[...this.hooks.store.values()].map((h) => HOOK_KEY + keyOf(h)),
      // Told again if the API server expired the Event (409 while it is still there).
      ...[...this.capsules.skipped.values()].map((c) => UNWATCHED_KEY + keyOf(c)),
    ]);
    return new Promise<number>((resolve) => {
      const pass = {
        keys,
        done: () => {
          this.resyncsCompleted++;
          this.events.emit('resync-done', this.resyncsCompleted);
          resolve(this.resyncsCompleted);
        },
      };
      if (!keys.size) return pass.done();
      this.passes.push(pass);
      for (const k of keys) this.enqueue(k);
    });
  }

  private settle(key: string): void {
    for (const p of [...this.passes]) {
      if (p.keys.delete(key) && p.keys.size === 0) {
        this.passes.splice(this.passes.indexOf(p), 1);
        p.done();
      }
    }
    this.events.emit('reconciled', key);
  }

  /**
   * With watched namespaces, one cluster-wide watch of Capsules instead of one per namespace when
   * RBAC allows listing them everywhere (the chart's default): one watch fewer per namespace, and
   * Capsules elsewhere are seen and told (unwatched.ts). Refused (403): one watch per namespace,
   * and Capsules elsewhere go unseen. Other failures are retried: the API server may be starting.
   */
  private async scopeCapsules(): Promise<void> {
    if (!this.o.namespaces?.length || this.o.clusterCapsules === false) return;
    const all = collectionPath('murmur.io/v1alpha1', 'Capsule');
    for (let backoff = 200; !this.stopping; backoff = Math.min(backoff * 2, 30_000)) {
      try {
        await this.client.request('GET', all, { query: { limit: 1 } });
        this.capsules.scope([all]);
        return;
      } catch (e) {
        if (e instanceof ApiError && (e.status === 403 || e.status === 401)) return;
        this.log(`listing Capsules cluster-wide failed: ${(e as Error).message}; retrying in ${backoff} ms`);
        await new Promise((r) => setTimeout(r, backoff));
      }
    }
  }

  /** Said loudly at start-up: which namespaces are watched, and whether Capsules elsewhere are told. */
  private async reportUnwatched(): Promise<void> {
    const ns = this.o.namespaces;
    if (!ns?.length) {
      this.log('watching Capsules in all namespaces');
      return;
    }
    const told = this.capsules.scopePaths[0] === collectionPath('murmur.io/v1alpha1', 'Capsule');
    this.log(
      `WARNING: watching Capsules only in namespaces ${ns.join(', ')} (chart value watchNamespaces): a Capsule anywhere else gets no objects and no status; ` +
        (told
          ? `each gets a Warning Event NamespaceNotWatched (${this.capsules.skipped.size} now)`
          : 'this operator may not list Capsules cluster-wide, so they are not told'),
    );
  }

  /** Graceful: stop taking keys, let in-flight reconciles finish, close the watches. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.resync) clearInterval(this.resync);
    this.queue.shutdown();
    await this.workers;
    await Promise.all(this.informers().map((i) => i.stop()));
  }

  // ---- reconcile ------------------------------------------------------------------------------

  inputFor(c: Capsule) {
    const ns = c.metadata.namespace ?? 'default';
    const key = keyOf(c);
    const hooks: Record<string, Hook | undefined> = {};
    for (const r of c.spec.hooks ?? []) hooks[r.name] = this.hooks.get(`${ns}/${r.name}`);
    const secrets: Record<string, SecretInfo | undefined> = {};
    const sref = c.spec.inference?.apiKeySecretRef?.name;
    if (sref) secrets[sref] = this.secrets.get(`${ns}/${sref}`);
    const aref = c.spec.a2a?.auth?.apiKeys?.secretName;
    if (aref) secrets[aref] = this.secrets.get(`${ns}/${aref}`);
    const storeRef = c.spec.store?.postgres?.urlSecretRef.name;
    if (storeRef) secrets[storeRef] = this.secrets.get(`${ns}/${storeRef}`);
    const oref = this.o.translate.otlp?.headersSecret?.name;
    if (oref) secrets[oref] = this.secrets.get(`${ns}/${oref}`);
    for (const m of mcpSecretNames(c.spec)) secrets[m] = this.secrets.get(`${ns}/${m}`);
    const services: Record<string, ServiceInfo | undefined> = {};
    for (const k of mcpServiceKeys(ns, c.spec)) services[k] = this.services.get(k);
    const callers = this.dependents.callers(key).filter((k) => this.capsules.store.has(k));
    return {
      capsule: c,
      hooks,
      secrets,
      services,
      callers,
      capsulePorts: this.dependents.ports,
      noTokenPeers: this.dependents.noTokens,
      options: this.o.translate,
      refusals: (yaml: string, n: number) => this.refusals.check(key, yaml, n),
    };
  }

  async reconcile(key: string): Promise<void> {
    const end = this.o.metrics.duration.startTimer();
    this.o.metrics.queueDepth.set(this.queue.length);
    try {
      if (key.startsWith(HOOK_KEY) || key.startsWith(UNWATCHED_KEY)) {
        if (key.startsWith(HOOK_KEY)) await this.reportHook(key.slice(HOOK_KEY.length));
        else await this.tellUnwatched(key.slice(UNWATCHED_KEY.length));
        this.queue.forget(key);
        this.o.metrics.reconciles.inc({ result: 'success' });
        return;
      }
      const c = this.capsules.get(key);
      if (!c || c.metadata.deletionTimestamp) {
        const [ns, name] = key.split('/') as [string, string];
        if (!c) this.refusals.forget(key);
        await this.prune(ns, name, new Set(), c?.metadata.uid);
        this.o.metrics.reconciles.inc({ result: 'success' });
        this.queue.forget(key);
        return;
      }
      // A sleep move (sleep.ts) is written to status before the objects of its new state.
      const input = this.inputFor(c);
      const { capsule, r, sleep } = await this.sleep.move(c, (capsule, sleep) => translate({ ...input, capsule, sleep }));
      const fatal = r.problems.some((p) => p.fatal);
      if (!fatal) {
        // Everything the pods need first (in parallel), then the Deployment that starts them. A
        // Capsule going to sleep so gets the activator's slice ready before its replicas go to 0.
        await Promise.all(r.objects.filter((o) => o.kind !== 'Deployment').map((o) => this.ensure(o)));
        for (const obj of r.objects.filter((o) => o.kind === 'Deployment')) await this.ensure(obj);
        await this.prune(c.metadata.namespace ?? 'default', c.metadata.name, new Set(r.objects.map((o) => `${o.kind}/${o.metadata.name}`)), undefined);
      }
      await this.report(capsule, r, sleep);
      this.queue.forget(key);
      this.o.metrics.reconciles.inc({ result: fatal ? 'blocked' : 'success' });
    } catch (e) {
      this.o.metrics.reconciles.inc({ result: 'error' });
      this.o.metrics.errors.inc();
      const delay = this.queue.addRateLimited(key);
      this.log(`reconcile ${key} failed (retry in ${delay} ms): ${(e as Error).message}`);
      // A write the API server refused (quota, size, webhook, conflict) is the Capsule's status and
      // a Warning event, not only a log line.
      if (e instanceof WriteRefused) await this.reportRefused(key, e).catch((x: Error) => this.log(`status for ${key} failed: ${x.message}`));
    } finally {
      end();
      this.settle(key);
    }
  }

  private async reportRefused(key: string, e: WriteRefused): Promise<void> {
    const c = this.capsules.get(key);
    if (!c || c.metadata.deletionTimestamp) return;
    const r = translate({ ...this.inputFor(c), sleep: this.sleep.inputOf(c) });
    r.problems.unshift({ reason: 'WriteRefused', fatal: true, message: e.message });
    // What the pods run is still the last applied configuration.
    await this.report(c, { ...r, configHash: c.status?.configHash ?? '' }, this.sleep.statusOf(c));
  }

  /** Apply one desired object unless the live one already has every field we set (apply.ts). */
  private ensure(obj: KubeObject): Promise<void> {
    return ensure(this.writes, this.owned.get(obj.kind)!, obj);
  }

  /** Delete the objects labelled as this capsule's that are not desired (apply.ts). */
  private prune(ns: string, name: string, keep: Set<string>, goneUid: string | undefined): Promise<void> {
    return prune(this.writes, this.owned.values(), this.capsules.get(`${ns}/${name}`), ns, name, keep, goneUid);
  }

  /** Events for new problems, then the status, each only when something changed (status-writes.ts). */
  private report(c: Capsule, r: TranslateResult, sleep?: SleepStatus): Promise<void> {
    return reportCapsule(this.writes, this.capsules, c, r, this.owned.get('Deployment')!.get(keyOf(c)), this.pods.indexed(keyOf(c)), sleep);
  }

  /** A Hook's status: its contract accepted or not, and the Capsules that use it; written only when changed. */
  private async reportHook(key: string): Promise<void> {
    const h = this.hooks.get(key);
    if (!h || h.metadata.deletionTimestamp) return;
    const ns = h.metadata.namespace;
    const usedBy: string[] = [];
    for (const c of this.capsules.store.values()) {
      if (c.metadata.namespace === ns && !c.metadata.deletionTimestamp && c.spec.hooks?.some((r) => r.name === h.metadata.name)) usedBy.push(c.metadata.name);
    }
    await reportHook(this.writes, this.hooks, h, usedBy);
  }

  /** The NamespaceNotWatched Event of a Capsule outside the watched namespaces, once per Capsule uid. */
  private async tellUnwatched(key: string): Promise<void> {
    const c = this.capsules.skipped.get(key);
    if (!c || c.metadata.deletionTimestamp) return;
    await tellUnwatched(this.writes, c, this.o.namespaces ?? []);
  }
}
