/**
 * A core/v1 Event about a Capsule: the one shape the operator (problems, sleep, unwatched
 * namespaces) and the activator (wake requests) write, so `kubectl describe capsule` and the
 * operator's field-selector watch read them alike.
 */
import type { Capsule, KubeObject } from '../api/types.ts';

export interface CapsuleEventInit {
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  /** `source.component` and `reportingComponent`. */
  component: string;
  /** `reportingInstance`: the writing pod. */
  instance: string;
  /** First and last timestamp (RFC 3339). */
  at: string;
  /** A fixed name (a second write gets 409); default: generated from the Capsule's name. */
  name?: string;
}

export function capsuleEvent(c: Capsule, e: CapsuleEventInit): KubeObject & Record<string, unknown> {
  const namespace = c.metadata.namespace ?? 'default';
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: e.name ? { name: e.name, namespace } : { name: '', generateName: `${c.metadata.name}.`, namespace },
    involvedObject: {
      apiVersion: c.apiVersion,
      kind: 'Capsule',
      name: c.metadata.name,
      namespace,
      uid: c.metadata.uid,
      resourceVersion: c.metadata.resourceVersion,
    },
    reason: e.reason,
    message: e.message,
    type: e.type,
    source: { component: e.component },
    reportingComponent: e.component,
    reportingInstance: e.instance,
    firstTimestamp: e.at,
    lastTimestamp: e.at,
    count: 1,
  };
}
