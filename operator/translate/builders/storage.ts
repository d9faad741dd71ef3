/**
 * The local disk a capsule pod may fill: the session `workdir` emptyDir (the SQLite store, the
 * fetched-artifact cache, conversations) gets a `sizeLimit`, and the runtime container an
 * `ephemeral-storage` request and limit, so one capsule cannot put its node under disk pressure:
 * past its limit the kubelet evicts that pod, not its neighbours.
 *
 * `spec.workdirSizeLimit` (default 1Gi) sizes the volume; `spec.resources` may name
 * `ephemeral-storage` like any resource. Each of the two ephemeral-storage values the Capsule does
 * not give is filled in: the request with EPHEMERAL_REQUEST (what the scheduler reserves on the
 * node), the limit with the workdir's size plus EPHEMERAL_HEADROOM_MIB (the 64Mi /tmp volume and
 * the container's logs: the root filesystem is read-only), so the volume's own limit is the one
 * that trips first and its message names the volume.
 */
import type { Capsule } from '../../api/types.ts';
import { quantity } from '../../api/quantity.ts';

export const DEFAULT_WORKDIR_SIZE = '1Gi';
export const TMP_SIZE = '64Mi';
export const EPHEMERAL_REQUEST = '256Mi';
export const EPHEMERAL_HEADROOM_MIB = 512;

type Resources = { limits?: Record<string, string>; requests?: Record<string, string> };

export function workdirSize(c: Capsule): string {
  return c.spec.workdirSizeLimit ?? DEFAULT_WORKDIR_SIZE;
}

/** `resources` with the ephemeral-storage request and limit filled in where the Capsule gives none. */
export function withEphemeralStorage(c: Capsule, resources: Resources): Resources {
  // Admission takes only plain quantities (a pattern on the field), which this parser reads; the 1Gi fallback is for a value written past it.
  const bytes = quantity(workdirSize(c)) ?? 2 ** 30;
  const limit = `${Math.ceil(bytes / 2 ** 20) + EPHEMERAL_HEADROOM_MIB}Mi`;
  return {
    ...resources,
    requests: { 'ephemeral-storage': EPHEMERAL_REQUEST, ...resources.requests },
    limits: { 'ephemeral-storage': limit, ...resources.limits },
  };
}
