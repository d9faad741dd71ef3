/**
 * Is a live object already what we would apply? Every field we set must be present with the same
 * value; fields the server or others add are ignored, including items others add to a keyed list
 * (an env var or a sidecar container added by hand: server-side apply keeps them, so they must
 * not make the object look stale, or every resync would re-apply it). Quantities compare by value
 * ("1000m" == "1"). And every field our field manager owns must still be desired (`ownsOnlyDesired`),
 * so a field we stop setting is applied away rather than hidden by the tolerance for extras.
 * This is what keeps the steady state free of writes: an up-to-date object is not even patched.
 */
import { quantity } from '../api/quantity.ts';

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * The merge key of a list whose items we build (the Kubernetes `x-kubernetes-list-map-keys` of the
 * lists the operator writes: containers, env, volumes, volumeMounts, ports): `name` when every item
 * has one, else `mountPath`. Other lists (args, NetworkPolicy rules) are atomic.
 */
function listKey(want: unknown[]): string | undefined {
  for (const k of ['name', 'mountPath']) if (want.length && want.every((w) => isObj(w) && typeof w[k] === 'string')) return k;
  return undefined;
}

export function covers(live: unknown, want: unknown, path = ''): boolean {
  if (want === undefined) return true;
  if (want === null) return live === null || live === undefined;
  if (Array.isArray(want)) {
    if (!Array.isArray(live)) return false;
    const key = listKey(want);
    if (key) {
      // Keyed list: each item we set is there (in our order among themselves); others may be added.
      let from = 0;
      for (const [i, w] of want.entries()) {
        const at = live.findIndex((l, j) => j >= from && isObj(l) && l[key] === (w as Record<string, unknown>)[key]);
        if (at < 0 || !covers(live[at], w, `${path}[${i}]`)) return false;
        from = at + 1;
      }
      return true;
    }
    if (live.length !== want.length) return false;
    return want.every((w, i) => covers(live[i], w, `${path}[${i}]`));
  }
  if (typeof want === 'object') {
    if (!isObj(live)) return false;
    return Object.entries(want as Record<string, unknown>).every(([k, w]) => covers(live[k], w, `${path}.${k}`));
  }
  if (live === want) return true;
  if (/\.(resources\.(limits|requests)\.[^.]+|sizeLimit)$/.test(path)) {
    const a = quantity(live);
    const b = quantity(want);
    return a !== undefined && b !== undefined && Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b));
  }
  return false;
}

/**
 * Does the desired object still set every field that `fieldsV1` (our manager's entry in the live
 * object's managedFields) says we own? `f:x` is a field, `k:{…}` an item of a keyed list, `v:…` an
 * item of a set, `i:n` an item by index, `.` the node itself.
 */
export function ownsOnlyDesired(fieldsV1: unknown, want: unknown): boolean {
  if (!isObj(fieldsV1)) return true;
  for (const [k, sub] of Object.entries(fieldsV1)) {
    if (k === '.') continue;
    if (k.startsWith('f:')) {
      if (!isObj(want)) return false;
      const v = want[k.slice(2)];
      if (v === undefined || v === null) return false;
      if (!ownsOnlyDesired(sub, v)) return false;
    } else if (k.startsWith('k:')) {
      if (!Array.isArray(want)) return false;
      let keyObj: Record<string, unknown>;
      try {
        keyObj = JSON.parse(k.slice(2)) as Record<string, unknown>;
      } catch {
        return false;
      }
      const item = want.find(
        (w) => isObj(w) && Object.entries(keyObj).every(([kk, kv]) => w[kk] === kv || (kk === 'protocol' && w[kk] === undefined && kv === 'TCP')),
      );
      if (item === undefined || !ownsOnlyDesired(sub, item)) return false;
    } else if (k.startsWith('v:')) {
      if (!Array.isArray(want)) return false;
      let v: unknown;
      try {
        v = JSON.parse(k.slice(2));
      } catch {
        return false;
      }
      if (!want.some((w) => w === v)) return false;
    } else if (k.startsWith('i:')) {
      if (!Array.isArray(want) || Number(k.slice(2)) >= want.length) return false;
      if (!ownsOnlyDesired(sub, want[Number(k.slice(2))])) return false;
    }
  }
  return true;
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  fieldsV1?: unknown;
}

/** Up to date = covers every field we set, and owns no field we no longer set. */
export function upToDate(live: object, want: Record<string, unknown>, manager: string): boolean {
  if (!covers(live, want)) return false;
  const mf = (live as { metadata?: { managedFields?: ManagedFieldsEntry[] } }).metadata?.managedFields;
  const ours = (mf ?? []).filter((m) => m.manager === manager && m.operation === 'Apply');
  return ours.every((m) => ownsOnlyDesired(m.fieldsV1, want));
}
