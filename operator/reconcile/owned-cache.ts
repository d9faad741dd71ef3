/**
 * The informer cache entry of an object the operator owns, and the no-op check on it.
 *
 * Why not the object itself: with 1 000 Capsules the owned objects (6 each) were 25 MiB of a 43 MiB
 * live heap even after cacheShape() (bench/operator.ts, heap snapshot: our managedFields entry
 * alone, a tree mirroring the object, was 13 MiB), and V8 keeps about twice its live heap
 * resident. What the reconcile needs from a live object is one answer, "does it already hold what
 * we would apply?" (upToDate), plus the metadata prune needs and a Deployment's rollout state.
 *
 * So an entry holds:
 * - `metadata`: name, namespace, uid, resourceVersion, generation, labels, ownerReferences,
 *   deletionTimestamp (prune, the Capsule index, the owner's key);
 * - for a Deployment, its rollout status, `spec.replicas` and the config-hash annotation of its
 *   template (the Capsule's status reads those, reconcile/status.ts);
 * - `fields`: cacheShape() of the object (the fields our apply set and our managedFields entry) as
 *   one JSON string, only until the no-op check has answered for this version;
 * - `verified`: once it has, the digest of the desired object this version was found to match.
 *
 * The answer is a pure function of (live version, desired object), and the resourceVersion changes
 * with every change to the live object (a new watch event brings a new entry, with `fields`), so
 * `verified` equal to the desired digest means up to date without looking again, and steady-state
 * resyncs stay free of writes and of parsing. An entry that has dropped its fields and meets a
 * different desired object (the Capsule changed) is applied: what changed the desired object
 * almost always changes the live one, and an apply that changes nothing is a no-op on the server.
 * What stays per verified object is its metadata and a 64-character digest: ~1 KiB, 6 KiB per
 * Capsule (a Deployment entry was ~13 KiB alone).
 */
import type { KubeObject } from '../api/types.ts';
import { ANNOTATION_CONFIG_HASH, sha256 } from '../translate/builders/common.ts';
import { cacheShape } from './cache-shape.ts';
import { upToDate } from './compare.ts';

export interface OwnedEntry extends KubeObject {
  /** JSON of cacheShape(live), until the no-op check has answered for this resourceVersion. */
  fields?: string;
  /** Digest of the desired object this resourceVersion was found up to date with. */
  verified?: string;
}

/** The cache entry of a live object `o` of ours (see the file comment). */
// biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
export function ownedEntry(o: any, manager: string): OwnedEntry {
  const m = o.metadata ?? {};
  const metadata: KubeObject['metadata'] = { name: m.name };
  for (const k of ['namespace', 'uid', 'resourceVersion', 'generation', 'labels', 'ownerReferences', 'deletionTimestamp'] as const)
    if (m[k] !== undefined) (metadata as Record<string, unknown>)[k] = m[k];
  const e: OwnedEntry = { apiVersion: o.apiVersion, kind: o.kind, metadata, fields: JSON.stringify(cacheShape(o, manager)) };
  if (o.kind === 'Deployment') {
    const s = o.status ?? {};
    e.status = {
      observedGeneration: s.observedGeneration,
      replicas: s.replicas,
      updatedReplicas: s.updatedReplicas,
      readyReplicas: s.readyReplicas,
      availableReplicas: s.availableReplicas,
      conditions: s.conditions,
    };
    const hash = o.spec?.template?.metadata?.annotations?.[ANNOTATION_CONFIG_HASH];
    e.spec = { replicas: o.spec?.replicas, template: { metadata: { annotations: hash === undefined ? {} : { [ANNOTATION_CONFIG_HASH]: hash } } } };
  }
  return e;
}

/**
 * JSON.stringify, not stableJson: the builders put keys in the same order for the same input, and
 * a different order would only cost one needless (no-op) apply; stableJson's sorting was 2.3% of
 * the operator's CPU profile under the bench.
 */
export const desiredDigest = (want: KubeObject): string => sha256(JSON.stringify(want));

/**
 * Is the cached live object already what we would apply? Answers from `verified` when it can,
 * else from the kept fields (and then remembers the answer and drops them); an entry with neither
 * is not known to be up to date.
 */
export function entryUpToDate(e: OwnedEntry, want: KubeObject, manager: string, digest = desiredDigest(want)): boolean {
  if (e.verified === digest) return true;
  if (e.fields === undefined) return false;
  if (!upToDate(JSON.parse(e.fields) as object, want as unknown as Record<string, unknown>, manager)) return false;
  e.verified = digest;
  e.fields = undefined;
  return true;
}

/** A newer entry for the same resourceVersion (the watch echo of our own write) keeps the answer. */
export function carryVerdict(next: OwnedEntry, prev: OwnedEntry | undefined): void {
  if (!prev?.verified || next.verified || prev.metadata.resourceVersion !== next.metadata.resourceVersion) return;
  next.verified = prev.verified;
  next.fields = undefined;
}
