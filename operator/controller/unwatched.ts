/**
 * Capsules outside the watched namespaces. The operator sees them on its one cluster-wide watch
 * of Capsules (when its RBAC allows list/watch of Capsules everywhere: the chart's default) and
 * tells their owners with one Warning Event each, in the Capsule's namespace, instead of leaving
 * them without status, objects or any word (issue 38 §3; docs/operator.md#namespaces-not-watched).
 */
import type { Capsule, KubeObject } from '../api/types.ts';
import { capsuleEvent } from '../kube/capsule-event.ts';
import { FIELD_MANAGER } from '../translate/builders/common.ts';

export const NOT_WATCHED_REASON = 'NamespaceNotWatched';
/** docs/errors.md. */
export const NOT_WATCHED_CODE = 'E-OP-030';

/** At most this many watched namespaces are named in the message (50 make an unreadable event). */
const NAMED = 10;

/**
 * The Event telling a Capsule's owner that no operator reconciles it. Its name is fixed per
 * Capsule uid, so a second operator start (or a resync) that tells again gets 409 AlreadyExists
 * instead of a second Event; once the API server has expired it (`--event-ttl`, 1 h by default),
 * the next resync writes it again.
 */
export function notWatchedEvent(c: Capsule, watched: readonly string[], identity: string, now: Date): KubeObject & Record<string, unknown> {
  const ns = c.metadata.namespace ?? 'default';
  const named = watched.length > NAMED ? `${watched.slice(0, NAMED).join(', ')} and ${watched.length - NAMED} more` : watched.join(', ');
  const at = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return capsuleEvent(c, {
    name: `${c.metadata.name}.not-watched.${c.metadata.uid}`,
    reason: NOT_WATCHED_REASON,
    message:
      `namespace ${ns} is not watched by capsule-operator (it watches ${named}): this Capsule gets no objects and no status. ` +
      `Add ${ns} to the chart value watchNamespaces (helm upgrade … --set 'watchNamespaces={…,${ns}}'), or move the Capsule to a watched namespace [${NOT_WATCHED_CODE}]`,
    type: 'Warning',
    component: FIELD_MANAGER,
    instance: identity,
    at,
  });
}
