/**
 * Status of a Capsule from the translate result and the live Deployment: conditions Ready,
 * Progressing, Degraded and Sleeping (with reasons), phase, observedGeneration, replicas,
 * readyReplicas, a2aUrl and configHash. `sameStatus` ignores transition times (and status.usage
 * and status.sleep, which others write) so an unchanged status is never written.
 */
import type { Capsule, CapsuleStatus, Condition, KubeObject } from '../api/types.ts';
import { ANNOTATION_CONFIG_HASH, selectorLabels, stableJson } from '../translate/builders/common.ts';
import type { Problem } from '../translate/index.ts';

interface DeploymentLike extends KubeObject {
  spec?: { replicas?: number; template?: { metadata?: { annotations?: Record<string, string> } } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

type C = Omit<Condition, 'lastTransitionTime'>;

/** What a capsule pod's container statuses say (only the fields runtimeExit reads). */
export interface PodLike extends KubeObject {
  status?: {
    containerStatuses?: Array<{
      name: string;
      ready?: boolean;
      restartCount?: number;
      lastState?: { terminated?: { exitCode?: number; reason?: string; message?: string } };
      state?: { terminated?: { exitCode?: number; reason?: string; message?: string }; waiting?: { reason?: string } };
    }>;
  };
}

/**
 * The runtime refused to start (or died) in a pod of the current configuration: its container
 * is not ready and its last (or current) termination has a non-zero exit code. The message is
 * the container's termination message — the kubelet fills it with the tail of the runtime's
 * output (terminationMessagePolicy FallbackToLogsOnError), where the runtime names the field.
 */
export function runtimeExit(pods: PodLike[], configHash: string): { pod: string; exitCode: number; message: string } | undefined {
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue;
    const hash = pod.metadata.annotations?.[ANNOTATION_CONFIG_HASH];
    if (hash !== undefined && hash !== configHash) continue;
    for (const cs of pod.status?.containerStatuses ?? []) {
      if (cs.name !== 'runtime' || cs.ready) continue;
      const t = cs.state?.terminated ?? cs.lastState?.terminated;
      if (t && (t.exitCode ?? 0) !== 0) {
        return { pod: pod.metadata.name, exitCode: t.exitCode ?? -1, message: (t.message ?? t.reason ?? '').trim().split('\n').slice(-6).join('\n') };
      }
    }
  }
  return undefined;
}

/**
 * The sleep state of a Capsule for its status (operator/controller/sleep.ts): the state, and the
 * `Sleeping` condition's reason and message (why it sleeps, wakes, or stays awake).
 */
export interface SleepStatus {
  state: 'Awake' | 'Sleeping' | 'Waking';
  reason: string;
  message: string;
}

export function computeStatus(
  capsule: Capsule,
  r: { problems: Problem[]; a2aUrl: string; configHash: string },
  deployment: DeploymentLike | undefined,
  now: string,
  exited?: ReturnType<typeof runtimeExit>,
  sleep?: SleepStatus,
): CapsuleStatus {
  const gen = capsule.metadata.generation ?? 0;
  // Asleep, the Deployment runs 0 replicas (spec.replicas stays: /scale and HPAs own it).
  const asleep = sleep?.state === 'Sleeping';
  const want = asleep ? 0 : (capsule.spec.replicas ?? 1);
  const fatal = r.problems.filter((p) => p.fatal);
  const warn = r.problems.filter((p) => !p.fatal);
  const ds = deployment?.status ?? {};
  const ready = ds.readyReplicas ?? 0;
  let conds: C[];
  if (fatal.length) {
    const p = fatal[0]!;
    const msg = fatal.map((x) => x.message).join('; ');
    conds = [
      { type: 'Ready', status: 'False', reason: p.reason, message: msg },
      { type: 'Progressing', status: 'False', reason: 'Blocked', message: 'nothing is applied until the problems above are fixed' },
      { type: 'Degraded', status: 'True', reason: p.reason, message: msg },
    ];
  } else {
    const hashLive = deployment?.spec?.template?.metadata?.annotations?.[ANNOTATION_CONFIG_HASH];
    const observed = deployment !== undefined && (ds.observedGeneration ?? 0) >= (deployment.metadata.generation ?? 0);
    const rolledOut =
      observed && hashLive === r.configHash && (ds.updatedReplicas ?? 0) >= want && (ds.replicas ?? 0) <= want && (deployment?.spec?.replicas ?? -1) === want;
    const available = rolledOut && ready >= want && (ds.availableReplicas ?? 0) >= want;
    const failing = ds.conditions?.find(
      (c) =>
        (c.type === 'ReplicaFailure' && c.status === 'True') || (c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded'),
    );
    const exitMsg = exited && `${ready}/${want} replicas ready; the runtime in pod ${exited.pod} exited with code ${exited.exitCode}: ${exited.message}`;
    conds = [
      // Asleep, callers are served (the activator answers and wakes it): Ready, also while the
      // last pods drain; waking, not until a pod is.
      asleep
        ? { type: 'Ready', status: 'True', reason: 'Sleeping', message: 'asleep: the activator answers and wakes it on the first request' }
        : available
          ? { type: 'Ready', status: 'True', reason: want === 0 ? 'ScaledToZero' : 'Available', message: `${ready}/${want} replicas ready` }
          : sleep?.state === 'Waking'
            ? { type: 'Ready', status: 'False', reason: 'Waking', message: `waking: ${ready}/${want} replicas ready` }
            : exitMsg
              ? { type: 'Ready', status: 'False', reason: 'RuntimeExited', message: exitMsg }
              : { type: 'Ready', status: 'False', reason: deployment ? 'RollingOut' : 'Creating', message: `${ready}/${want} replicas ready` },
      rolledOut
        ? { type: 'Progressing', status: 'False', reason: 'RolloutComplete', message: 'pods run the current configuration' }
        : {
            type: 'Progressing',
            status: 'True',
            reason: deployment ? 'RollingOut' : 'Creating',
            message: `${ds.updatedReplicas ?? 0}/${want} pods updated to the current configuration`,
          },
      !available && exitMsg
        ? { type: 'Degraded', status: 'True', reason: 'RuntimeExited', message: exitMsg }
        : failing
          ? { type: 'Degraded', status: 'True', reason: failing.reason ?? failing.type, message: failing.message ?? '' }
          : warn.length
            ? { type: 'Degraded', status: 'True', reason: warn[0]!.reason, message: warn.map((x) => x.message).join('; ') }
            : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' },
    ];
  }
  if (sleep) conds.push({ type: 'Sleeping', status: asleep ? 'True' : 'False', reason: sleep.reason, message: sleep.message });
  const prev = capsule.status?.conditions ?? [];
  const conditions: Condition[] = conds.map((c) => {
    const p = prev.find((x) => x.type === c.type);
    return { ...c, observedGeneration: gen, lastTransitionTime: p && p.status === c.status ? p.lastTransitionTime : now };
  });
  const readyNow = conditions.find((c) => c.type === 'Ready')?.status === 'True';
  const failed = fatal.length > 0 || conditions.some((c) => c.type === 'Degraded' && c.reason === 'RuntimeExited' && c.status === 'True');
  return {
    observedGeneration: gen,
    // What `kubectl get capsules` shows as State. Sleeping and Waking are also the sleep state
    // itself (read back by the controller), kept through a fatal problem: nothing is applied
    // then, so the last applied objects still are the asleep (or waking) ones.
    phase: asleep ? 'Sleeping' : sleep?.state === 'Waking' ? 'Waking' : failed ? 'Failed' : readyNow ? 'Ready' : 'Pending',
    conditions,
    // The /scale subresource's statusReplicasPath: pods that exist now (what an HPA compares with).
    replicas: ds.replicas ?? 0,
    readyReplicas: ready,
    a2aUrl: r.a2aUrl,
    configHash: r.configHash,
    selector: Object.entries(selectorLabels(capsule))
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  };
}

// status.usage belongs to the usage scraper (operator/usage/) and status.sleep to the sleep
// transitions (operator/controller/sleep.ts): reconcile neither compares nor writes them (its
// merge patch leaves those fields alone).
const strip = ({ usage: _usage, sleep: _sleep, ...s }: CapsuleStatus = {}) =>
  stableJson({
    ...s,
    conditions: (s.conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c).sort((a, b) => a.type.localeCompare(b.type)),
  });

export function sameStatus(a: CapsuleStatus | undefined, b: CapsuleStatus | undefined): boolean {
  return strip(a) === strip(b);
}
