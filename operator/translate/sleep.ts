/**
 * Whether, and after how long idle, a Capsule sleeps (scales to zero): `spec.sleep.afterIdle`, a
 * Go-style duration of at least 10s or `never`. Pure, shared by translate (which renders replicas 0,
 * the activator's EndpointSlice and its NetworkPolicy peer) and by the controller (which decides
 * when to sleep and writes the `Sleeping` condition from `reason`/`message`).
 *
 * A sleeping capsule's pods are deleted, so it may sleep only on a store that survives that
 * (postgres, or the embedded store on a volumeClaim): the default is 15m there and `never` on the
 * emptyDir store; an explicit afterIdle on the emptyDir store is refused (admission, and a problem
 * here for what got past it). The way callers authenticate does not matter: the activator checks
 * ServiceAccount tokens by TokenReview and API keys by the digests the operator publishes
 * (operator/controller/sleep.ts, operator/activator/auth.ts).
 */
import type { Capsule, CapsuleSpec } from '../api/types.ts';
import type { TranslateOptions } from './options.ts';
import type { Problem } from './problems.ts';

export const DEFAULT_AFTER_IDLE = '15m';
export const MIN_AFTER_IDLE_SECONDS = 10;
/** A Go `time.ParseDuration` string without sign (the CRD's CEL rule uses the same pattern, then `duration()`). */
export const DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(h|m|s|ms|us|ns))+$';

/** What the controller observed of the sleep state, for translate (absent: awake, no activator pod known). */
export interface SleepInput {
  phase: 'Awake' | 'Sleeping' | 'Waking';
  /** Ready pods of the capsule now: the activator's endpoints are ready exactly when there are none. */
  readyPods: number;
  /** IPs of the activator's pods (from its Service's EndpointSlices). */
  activatorIPs: string[];
}

export interface SleepPolicy {
  /** null: never sleeps. */
  afterIdleSeconds: number | null;
  problems: Problem[];
  /** Reason of the `Sleeping=False` condition while awake: Awake, AlwaysAwake, StoreNotDurable, InvalidAfterIdle, NoActivator. */
  reason: string;
  /** Its message: why it does (not) sleep, and how to change that. */
  message: string;
}

const UNIT_SECONDS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 };

/** Seconds of a Go-style duration (`15m`, `1h30m`, `2.5s`), or undefined if it is not one. */
export function parseDuration(s: string): number | undefined {
  if (!new RegExp(DURATION_PATTERN).test(s)) return undefined;
  let total = 0;
  for (const m of s.matchAll(/([0-9]+(?:\.[0-9]+)?)(h|ms|m|s|us|ns)/g)) total += Number(m[1]) * UNIT_SECONDS[m[2]!]!;
  return total;
}

/** Go's `time.Duration.String()` for whole and fractional seconds: 900 → `15m0s`, 30 → `30s`, 5400 → `1h30m0s`. */
export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds - h * 3600) / 60);
  const s = Number((seconds - h * 3600 - m * 60).toFixed(3));
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

const durable = (spec: CapsuleSpec) => !!spec.store?.postgres || !!spec.store?.embedded?.volumeClaim;

const STORE_FIXES = 'set spec.store.embedded.volumeClaim (e.g. {size: 1Gi}: the SQLite store on a PersistentVolumeClaim) or spec.store.postgres';

/** The capsule's own sleep setting, from its spec alone (see effectiveSleep for the activator). */
export function sleepPolicy(capsule: Capsule): SleepPolicy {
  const spec = capsule.spec;
  const given = spec.sleep?.afterIdle;
  if (given === 'never') return never('AlwaysAwake', 'spec.sleep.afterIdle is never: the capsule stays awake');
  if (given === undefined) {
    if (!durable(spec))
      return never(
        'StoreNotDurable',
        `the embedded store lives on the pod's emptyDir, which a sleeping capsule would lose; to let it sleep after ${DEFAULT_AFTER_IDLE} idle, ${STORE_FIXES}`,
      );
    const seconds = parseDuration(DEFAULT_AFTER_IDLE)!;
    return { afterIdleSeconds: seconds, problems: [], reason: 'Awake', message: `sleeps after ${formatDuration(seconds)} idle (the default)` };
  }
  const problems: Problem[] = [];
  const seconds = parseDuration(given);
  if (seconds === undefined || seconds < MIN_AFTER_IDLE_SECONDS)
    problems.push({
      reason: 'InvalidSleep',
      fatal: false,
      field: 'spec.sleep.afterIdle',
      message: `spec.sleep.afterIdle '${given}' is not ${seconds === undefined ? 'a duration' : 'at least 10s'}: give a duration of at least 10s such as 30s, 15m or 1h30m, or never; the capsule stays awake`,
    });
  if (!durable(spec))
    problems.push({
      reason: 'SleepNeedsDurableStore',
      fatal: false,
      field: 'spec.sleep.afterIdle',
      message: `spec.sleep.afterIdle is set but the embedded store lives on the pod's emptyDir, which sleeping would lose (tasks, conversations): ${STORE_FIXES}, or set afterIdle: never; the capsule stays awake`,
    });
  if (problems.length) {
    const reason = problems[0]!.reason === 'InvalidSleep' ? 'InvalidAfterIdle' : 'StoreNotDurable';
    return { afterIdleSeconds: null, problems, reason, message: problems.map((p) => p.message).join('; ') };
  }
  return { afterIdleSeconds: seconds!, problems: [], reason: 'Awake', message: `sleeps after ${formatDuration(seconds!)} idle` };
}

/** sleepPolicy, and never without an activator to hold requests while asleep (the chart installs one). */
export function effectiveSleep(capsule: Capsule, options: Pick<TranslateOptions, 'activator'>): SleepPolicy {
  const p = sleepPolicy(capsule);
  if (p.afterIdleSeconds === null || options.activator) return p;
  return {
    ...p,
    afterIdleSeconds: null,
    reason: 'NoActivator',
    message: 'the operator runs without an activator (the chart installed none), so nothing would answer while asleep; the capsule stays awake',
  };
}

function never(reason: string, message: string): SleepPolicy {
  return { afterIdleSeconds: null, problems: [], reason, message };
}
