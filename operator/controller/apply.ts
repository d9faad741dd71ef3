/**
 * Writing a Capsule's owned objects: apply one desired object unless the live one already holds
 * every field we set, and delete the ones labelled as the Capsule's that are no longer desired.
 * A 4xx from the API server is a WriteRefused, which the controller reports on the Capsule.
 */
import type { Capsule, KubeObject } from '../api/types.ts';
import { ApiError, type KubeClient } from '../kube/client.ts';
import { keyOf, type Informer } from '../kube/informer.ts';
import { desiredDigest, entryUpToDate, type OwnedEntry } from '../reconcile/owned-cache.ts';
import { FIELD_MANAGER } from '../translate/builders/common.ts';
import type { OperatorMetrics } from './metrics.ts';

/** What every write of the controller goes through. */
export interface WriteContext {
  client: KubeClient;
  metrics: OperatorMetrics;
  /** Test seam: awaited before each object write (lets a test kill the operator mid-reconcile). */
  beforeWrite?: (obj: KubeObject) => Promise<void> | void;
}

/** Apply one desired object unless the live one (in `inf`, its kind's informer) already has every field we set. */
export async function ensure(ctx: WriteContext, inf: Informer<OwnedEntry>, obj: KubeObject): Promise<void> {
  const live = inf.get(keyOf(obj));
  const digest = desiredDigest(obj);
  if (live && entryUpToDate(live, obj, FIELD_MANAGER, digest)) return;
  await ctx.beforeWrite?.(obj);
  let out: KubeObject;
  try {
    out = await ctx.client.apply<KubeObject>(obj, FIELD_MANAGER);
  } catch (e) {
    if (e instanceof ApiError && e.status >= 400 && e.status < 500) throw new WriteRefused(obj, e);
    throw e;
  }
  ctx.metrics.writes.inc({ verb: 'apply' });
  inf.offer(out);
  // The server's answer to the apply: judge it now, so the entry drops its fields right away.
  const cached = inf.get(keyOf(obj));
  if (cached && cached.metadata.resourceVersion === out.metadata.resourceVersion) entryUpToDate(cached, obj, FIELD_MANAGER, digest);
}

/**
 * Delete objects labelled as Capsule `ns/name`'s that are not in `keep` (`Kind/name`). `live` is
 * the Capsule of that name in the cache. With `goneUid` set (the capsule is gone or going),
 * everything labelled for it goes, except objects owned by a newer Capsule of the same name.
 */
export async function prune(
  ctx: WriteContext,
  owned: Iterable<Informer<OwnedEntry>>,
  live: Capsule | undefined,
  ns: string,
  name: string,
  keep: Set<string>,
  goneUid: string | undefined,
): Promise<void> {
  for (const inf of owned) {
    for (const o of inf.indexed(`${ns}/${name}`)) {
      if (keep.has(`${o.kind}/${o.metadata.name}`)) continue;
      const owner = o.metadata.ownerReferences?.find((r) => r.controller)?.uid;
      if (live && !live.metadata.deletionTimestamp && owner && owner !== live.metadata.uid && goneUid === undefined) continue;
      await ctx.beforeWrite?.(o);
      await ctx.client.delete(o);
      ctx.metrics.writes.inc({ verb: 'delete' });
      inf.forget(keyOf(o));
    }
  }
}

/** A write of one of the Capsule's objects that the API server refused (4xx). */
export class WriteRefused extends Error {
  constructor(obj: KubeObject, e: ApiError) {
    // Bounded: the message goes into a condition and an Event (an API message may quote the object).
    super(
      `the API server refused to write ${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} (${e.status} ${e.reason}): ${e.message.length > 800 ? `${e.message.slice(0, 800)}…` : e.message}`,
    );
    this.name = 'WriteRefused';
  }
}
