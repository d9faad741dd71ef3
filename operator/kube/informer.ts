/**
 * A list-then-watch cache for one kind over one or more collection paths (one per watched
 * namespace, or one cluster-wide). It resumes from the last resourceVersion when a watch ends
 * (the API server closes watches every few minutes), relists on 410 Gone, backs off on errors,
 * asks for bookmarks, and on relist reports the difference from what it held (so deletions
 * missed while disconnected are still seen).
 */
import type { KubeObject } from '../api/types.ts';
import { ApiError, type KubeClient } from './client.ts';
import { sharedAbort } from './shared-abort.ts';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type Handler<T> = (type: EventType, obj: T, old: T | undefined) => void;

export interface InformerOptions<T> {
  labelSelector?: string;
  /** e.g. `reason=WakeRequested,source=capsule-activator` (Events); what the API server supports per kind. */
  fieldSelector?: string;
  /** Reduce what is kept (e.g. drop Secret values). */
  // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
  transform?: (o: any) => T;
  /** Server-side watch timeout; the watch is re-opened from the last resourceVersion. */
  timeoutSeconds?: number;
  log?: (msg: string) => void;
  /**
   * A secondary key (e.g. the owning Capsule's `namespace/name`): `indexed(k)` then answers in
   * O(objects under k) what a scan of the whole store answers in O(store): a reconcile that
   * scanned every cached object made N reconciles O(N²) (bench/operator.ts).
   */
  indexBy?: (o: T) => string | undefined;
  /**
   * Which objects are this informer's (default: all). The others are kept apart (`skipped`) and
   * go to `onSkipped` handlers only: one cluster-wide watch of Capsules serves the watched
   * namespaces and tells the controller about Capsules outside them.
   */
  keep?: (o: T) => boolean;
}

export const keyOf = (o: { metadata: { name: string; namespace?: string } }): string =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

function rvNumber(rv: string | undefined): number | undefined {
  if (!rv || !/^\d+$/.test(rv)) return undefined;
  return Number(rv);
}

/** How many deleted keys an informer remembers (for {@link Informer.offer}). */
const TOMBSTONES = 4096;

export class Informer<T extends KubeObject> {
  /** Read-only outside this class: writes go through put/drop so the index stays true. */
  readonly store = new Map<string, T>();
  private index = new Map<string, Set<string>>();
  /** Objects `keep` refused, by key: read-only outside this class. */
  readonly skipped = new Map<string, T>();
  private handlers: Handler<T>[] = [];
  private skippedHandlers: Handler<T>[] = [];
  private syncedPaths = new Set<string>();
  private stopped = false;
  private abort = sharedAbort();
  private loops: Promise<void>[] = [];
  /**
   * The last resourceVersion of each key seen deleted (newest {@link TOMBSTONES} keys), so that a
   * write's answer arriving after the delete's event (a status patch sent just before the delete)
   * does not put the deleted object back in the cache, where it would stay until the next relist.
   */
  private deleted = new Map<string, number>();
  relists = 0;

  constructor(
    private readonly client: KubeClient,
    readonly name: string,
    private paths: string[],
    private readonly opts: InformerOptions<T> = {},
  ) {}

  on(h: Handler<T>): this {
    this.handlers.push(h);
    return this;
  }

  onSkipped(h: Handler<T>): this {
    this.skippedHandlers.push(h);
    return this;
  }

  /** Watch these collection paths instead (before start only). */
  scope(paths: string[]): void {
    if (this.loops.length) throw new Error(`informer ${this.name}: scope() after start()`);
    this.paths = paths;
  }

  /** The collection paths this informer lists and watches. */
  get scopePaths(): readonly string[] {
    return this.paths;
  }

  get synced(): boolean {
    return this.syncedPaths.size === this.paths.length;
  }

  list(): T[] {
    return [...this.store.values()];
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  /** The cached objects whose `indexBy` key is `ix` (empty without `indexBy`). */
  indexed(ix: string): T[] {
    const keys = this.index.get(ix);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.store.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  private kept(o: T): boolean {
    return !this.opts.keep || this.opts.keep(o);
  }

  private held(k: string): T | undefined {
    return this.store.get(k) ?? this.skipped.get(k);
  }

  private put(k: string, o: T): void {
    if (!this.kept(o)) {
      this.skipped.set(k, o);
      return;
    }
    const prev = this.store.get(k);
    this.store.set(k, o);
    const by = this.opts.indexBy;
    if (!by) return;
    const was = prev ? by(prev) : undefined;
    const now = by(o);
    if (was === now) return;
    if (was !== undefined) this.unindex(was, k);
    if (now !== undefined) {
      let set = this.index.get(now);
      if (!set) this.index.set(now, (set = new Set()));
      set.add(k);
    }
  }

  private drop(k: string): void {
    if (this.skipped.delete(k)) return;
    const prev = this.store.get(k);
    if (!prev) return;
    this.store.delete(k);
    const was = this.opts.indexBy?.(prev);
    if (was !== undefined) this.unindex(was, k);
  }

  private unindex(ix: string, k: string): void {
    const set = this.index.get(ix);
    if (!set) return;
    set.delete(k);
    if (!set.size) this.index.delete(ix);
  }

  /**
   * Write-through after our own write: keep the server's answer unless the cache already holds
   * a newer version (watch events for older versions may still be on their way).
   */
  // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
  offer(o: any): void {
    const obj = this.opts.transform ? this.opts.transform(o) : (o as T);
    const k = keyOf(obj);
    const cur = this.store.get(k);
    const a = rvNumber(cur?.metadata.resourceVersion);
    const b = rvNumber(obj.metadata.resourceVersion);
    if (cur && a !== undefined && b !== undefined && a >= b) return;
    const gone = cur ? undefined : this.deleted.get(k);
    if (gone !== undefined && b !== undefined && b <= gone) return;
    this.put(k, obj);
  }

  private tombstone(k: string, o: T | undefined): void {
    const rv = rvNumber(o?.metadata.resourceVersion);
    if (rv === undefined) return;
    this.deleted.delete(k);
    this.deleted.set(k, rv);
    if (this.deleted.size > TOMBSTONES) this.deleted.delete(this.deleted.keys().next().value as string);
  }

  forget(key: string): void {
    this.drop(key);
  }

  private emit(type: EventType, obj: T, old: T | undefined): void {
    for (const h of this.kept(obj) ? this.handlers : this.skippedHandlers) {
      try {
        h(type, obj, old);
      } catch (e) {
        this.opts.log?.(`informer ${this.name}: handler failed: ${(e as Error).message}`);
      }
    }
  }

  start(): void {
    for (const p of this.paths) this.loops.push(this.run(p));
  }

  async waitForSync(timeoutMs = 60_000): Promise<void> {
    const t0 = Date.now();
    while (!this.synced) {
      if (this.stopped) throw new Error(`informer ${this.name} stopped`);
      if (Date.now() - t0 > timeoutMs) throw new Error(`informer ${this.name} did not sync in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await Promise.allSettled(this.loops);
  }

  private inPath(path: string, o: T): boolean {
    if (this.paths.length === 1) return true;
    const m = /\/namespaces\/([^/]+)\//.exec(path);
    return !m || o.metadata.namespace === m[1];
  }

  private async relist(path: string): Promise<string> {
    this.relists++;
    // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind), before transform
    const { items, resourceVersion } = await this.client.list<any>(path, { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector });
    const fresh = new Map<string, T>();
    for (const raw of items) {
      const o = this.opts.transform ? this.opts.transform(raw) : (raw as T);
      fresh.set(keyOf(o), o);
    }
    for (const [k, old] of [...this.store, ...this.skipped]) {
      if (this.inPath(path, old) && !fresh.has(k)) {
        this.tombstone(k, old);
        this.drop(k);
        this.emit('DELETED', old, old);
      }
    }
    for (const [k, o] of fresh) {
      const old = this.held(k);
      this.put(k, o);
      if (!old) this.emit('ADDED', o, undefined);
      else if (old.metadata.resourceVersion !== o.metadata.resourceVersion) this.emit('MODIFIED', o, old);
    }
    this.syncedPaths.add(path);
    return resourceVersion;
  }

  private async run(path: string): Promise<void> {
    let rv: string | undefined;
    let backoff = 200;
    while (!this.stopped) {
      try {
        if (rv === undefined) rv = await this.relist(path);
        let gone = false;
        await this.client.watch(
          path,
          {
            resourceVersion: rv,
            allowWatchBookmarks: true,
            timeoutSeconds: this.opts.timeoutSeconds ?? 300,
            labelSelector: this.opts.labelSelector,
            fieldSelector: this.opts.fieldSelector,
          },
          (type, raw) => {
            if (type === 'ERROR') {
              if (raw?.code === 410) gone = true;
              else this.opts.log?.(`informer ${this.name}: watch error ${raw?.code} ${raw?.message}`);
              return;
            }
            const newRv = raw?.metadata?.resourceVersion as string | undefined;
            if (type === 'BOOKMARK') {
              if (newRv) rv = newRv;
              return;
            }
            const o = this.opts.transform ? this.opts.transform(raw) : (raw as T);
            const k = keyOf(o);
            const old = this.held(k);
            if (newRv) rv = newRv;
            if (type === 'DELETED') {
              this.tombstone(k, o);
              this.drop(k);
              this.emit('DELETED', o, old);
            } else if (type === 'ADDED' || type === 'MODIFIED') {
              this.put(k, o);
              this.emit(old ? 'MODIFIED' : 'ADDED', o, old);
            }
          },
          this.abort.signal,
        );
        if (gone) rv = undefined; // 410: our resourceVersion is too old; relist
        backoff = 200;
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof ApiError && e.status === 410) rv = undefined;
        this.opts.log?.(`informer ${this.name}: ${(e as Error).message}; retrying in ${backoff} ms`);
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }
}
