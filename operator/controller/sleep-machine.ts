/**
 * When a Capsule sleeps, wakes and counts as awake again: a pure function of what the controller
 * observed, table-tested (test/operator/unit/sleep-machine.test.ts). The controller (sleep.ts)
 * carries out the action it returns: the status write, the Event, the re-render.
 *
 * The persisted state is `status.phase`: Sleeping and Waking are the sleep states, anything else
 * is awake. An awake Capsule goes to sleep only when EVERY ready pod was seen idle for at least
 * afterIdle by a fresh scrape, and an activator endpoint is ready to answer while it sleeps (with
 * none, nothing would hold requests or wake it). A sleeping one wakes on a WakeRequested Event
 * newer than its sleep, or when sleeping was turned off; a waking one is awake once a pod is ready.
 */
import { formatDuration } from '../translate/sleep.ts';

export type SleepState = 'Awake' | 'Sleeping' | 'Waking';

/** One ready pod's last scrape of `capsule_idle_seconds`. */
export interface IdleObservation {
  /** Seconds since the pod's last activity ended; 0 while busy. */
  idleSeconds: number;
  /** When it was scraped (ms since the epoch). */
  at: number;
}

export interface SleepMachineInput {
  /** From effectiveSleep(): null = never sleeps, with `reason`/`message` saying why. */
  afterIdleSeconds: number | null;
  policyReason: string;
  policyMessage: string;
  state: SleepState;
  /** Ready pods of the capsule (the Deployment's readyReplicas). */
  readyPods: number;
  /** One entry per ready pod: its last observation, undefined when not scraped yet. */
  idle: Array<IdleObservation | undefined>;
  /** An observation older than this (ms) is not trusted to say the pod is still idle. */
  staleAfterMs: number;
  /** At least one activator endpoint is ready. */
  activatorReady: boolean;
  /** WakeRequested Events seen since the capsule went to sleep. */
  wakeRequests: number;
  now: number;
}

export type SleepAction =
  | { kind: 'stay'; reason: string; message: string }
  | { kind: 'sleep'; reason: 'Idle'; message: string; idleSeconds: number }
  | { kind: 'wake'; reason: 'WakeRequested' | 'SleepDisabled'; message: string }
  | { kind: 'ready'; reason: 'Awake'; message: string };

/** Go's Duration.String() of whole seconds: 900 → 15m0s (what `kubectl describe` readers know). */
const goDuration = (seconds: number) => formatDuration(Math.floor(seconds));

export function nextSleepAction(i: SleepMachineInput): SleepAction {
  if (i.state === 'Sleeping') {
    if (i.afterIdleSeconds === null) return { kind: 'wake', reason: 'SleepDisabled', message: `waking: the capsule no longer sleeps (${i.policyMessage})` };
    if (i.wakeRequests > 0)
      return {
        kind: 'wake',
        reason: 'WakeRequested',
        message: `waking: the activator holds ${i.wakeRequests === 1 ? 'a request' : `${i.wakeRequests} requests`}`,
      };
    return { kind: 'stay', reason: 'Idle', message: 'asleep: the activator answers the agent card and wakes the capsule on the first request' };
  }
  if (i.state === 'Waking') {
    if (i.readyPods > 0) return { kind: 'ready', reason: 'Awake', message: `awake: ${i.readyPods} ready pod${i.readyPods === 1 ? '' : 's'}` };
    return { kind: 'stay', reason: 'WakeRequested', message: 'waking: waiting for a ready pod' };
  }
  // Awake.
  if (i.afterIdleSeconds === null) return { kind: 'stay', reason: i.policyReason, message: i.policyMessage };
  const after = i.afterIdleSeconds;
  const stay = (why: string) => ({ kind: 'stay' as const, reason: 'Awake', message: `${i.policyMessage}; ${why}` });
  if (!i.activatorReady) return stay('not now: no activator endpoint is ready to answer while it sleeps');
  if (i.readyPods === 0 || i.idle.length === 0) return stay('no ready pod to observe');
  let least = Infinity;
  for (const o of i.idle) {
    if (!o || i.now - o.at > i.staleAfterMs) return stay('waiting for a fresh idle reading of every ready pod');
    least = Math.min(least, o.idleSeconds);
  }
  if (least <= 0) return stay('busy');
  if (least < after) return stay(`idle for ${goDuration(least)}`);
  return { kind: 'sleep', reason: 'Idle', message: `idle for ${goDuration(least)}`, idleSeconds: least };
}
