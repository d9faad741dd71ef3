/**
 * What the informer cache keeps of an object the operator owns: only the fields its own
 * server-side apply set (the paths in its managedFields entry), the metadata prune and status need,
 * and a Deployment's rollout status. The no-op check (`upToDate`) reads nothing else: it compares
 * the fields we set, and a field another manager took over leaves our entry, so its absence here
 * makes the object stale and is applied back, as drift should be. The rest (defaults, status the
 * controllers write, other managers' fields) would cost memory per Capsule for nothing.
 */
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** `obj` reduced to the paths of `fieldsV1` (a leaf `{}` keeps the whole value: an atomic field). */
export function pickFields(obj: unknown, fieldsV1: unknown): unknown {
  if (!isObj(fieldsV1)) return obj;
  const keys = Object.keys(fieldsV1).filter((k) => k !== '.');
  if (keys.length === 0) return obj;
  if (Array.isArray(obj)) {
    // Our items, in the live order (covers() checks the relative order of our items).
    const keyed: Array<[Record<string, unknown>, unknown]> = [];
    const values: unknown[] = [];
    for (const k of keys) {
      try {
        if (k.startsWith('k:')) keyed.push([JSON.parse(k.slice(2)) as Record<string, unknown>, fieldsV1[k]]);
        else if (k.startsWith('v:')) values.push(JSON.parse(k.slice(2)));
      } catch {
        /* not JSON: skip */
      }
    }
    const out: unknown[] = [];
    obj.forEach((x, i) => {
      const hit = keyed.find(([key]) => isObj(x) && Object.entries(key).every(([kk, kv]) => x[kk] === kv));
      if (hit) out.push(pickFields(x, hit[1]));
      else if (`i:${i}` in fieldsV1) out.push(pickFields(x, fieldsV1[`i:${i}`]));
      else if (values.includes(x)) out.push(x);
    });
    return out;
  }
  if (!isObj(obj)) return obj;
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    if (!k.startsWith('f:')) continue;
    const name = k.slice(2);
    if (name in obj) out[name] = pickFields(obj[name], fieldsV1[k]);
  }
  return out;
}

interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  ownerReferences?: unknown[];
  deletionTimestamp?: string;
  managedFields?: Array<{ manager?: string; operation?: string; fieldsV1?: unknown }>;
}

/** The cached form of an owned object (see the file comment); `manager` is our field manager. */
export function cacheShape(
  o: { apiVersion: string; kind: string; metadata: Meta; status?: Record<string, unknown> } & Record<string, unknown>,
  manager: string,
): Record<string, unknown> {
  const ours = (o.metadata.managedFields ?? []).filter((m) => m.manager === manager && m.operation === 'Apply');
  const m = o.metadata;
  const metadata: Meta = {
    name: m.name,
    ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
    ...(m.uid !== undefined ? { uid: m.uid } : {}),
    ...(m.resourceVersion !== undefined ? { resourceVersion: m.resourceVersion } : {}),
    ...(m.generation !== undefined ? { generation: m.generation } : {}),
    ...(m.labels !== undefined ? { labels: m.labels } : {}),
    ...(m.ownerReferences !== undefined ? { ownerReferences: m.ownerReferences } : {}),
    ...(m.deletionTimestamp !== undefined ? { deletionTimestamp: m.deletionTimestamp } : {}),
    managedFields: ours,
  };
  // Without an entry of ours (created by someone else, or before the first apply) keep it whole.
  if (!ours.length) return { ...o, metadata };
  const picked = pickFields(o, ours[0]!.fieldsV1) as Record<string, unknown>;
  // Each later entry's fields over the first's, merged into one object (not a copy per entry).
  const picked2: Record<string, unknown> = { ...picked };
  for (const e of ours.slice(1)) Object.assign(picked2, pickFields(o, e.fieldsV1));
  const pm = isObj(picked2.metadata) ? picked2.metadata : {};
  const out: Record<string, unknown> = {
    ...picked2,
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: { ...pm, ...metadata, labels: m.labels, ...(isObj(pm.annotations) ? { annotations: pm.annotations } : {}) },
  };
  // A Deployment's rollout status feeds the Capsule's status.
  if (o.kind === 'Deployment' && o.status) {
    const s = o.status;
    out.status = {
      observedGeneration: s.observedGeneration,
      replicas: s.replicas,
      updatedReplicas: s.updatedReplicas,
      readyReplicas: s.readyReplicas,
      availableReplicas: s.availableReplicas,
      conditions: s.conditions,
    };
  }
  return out;
}
