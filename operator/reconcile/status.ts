/**
 * Status of a Capsule from the translate result and the live Deployment: conditions Ready,
 * Progressing and Degraded (with reasons), observedGeneration, replicas, readyReplicas, a2aUrl and
 * configHash. `sameStatus` ignores transition times (and status.usage, which the usage scraper owns) so
 * an unchanged status is never written.
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

export function computeStatus(
  capsule: Capsule,
  r: { problems: Problem[]; a2aUrl: string; configHash: string },
  deployment: DeploymentLike | undefined,
  now: string,
): CapsuleStatus {
  const gen = capsule.metadata.generation ?? 0;
  const want = capsule.spec.replicas ?? 1;
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
      (c) => (c.type === 'ReplicaFailure' && c.status === 'True') || (c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded'),
    );
    conds = [
      available
        ? { type: 'Ready', status: 'True', reason: want === 0 ? 'ScaledToZero' : 'Available', message: `${ready}/${want} replicas ready` }
        : { type: 'Ready', status: 'False', reason: deployment ? 'RollingOut' : 'Creating', message: `${ready}/${want} replicas ready` },
      rolledOut
        ? { type: 'Progressing', status: 'False', reason: 'RolloutComplete', message: 'pods run the current configuration' }
        : { type: 'Progressing', status: 'True', reason: deployment ? 'RollingOut' : 'Creating', message: `${ds.updatedReplicas ?? 0}/${want} pods updated to the current configuration` },
      failing
        ? { type: 'Degraded', status: 'True', reason: failing.reason ?? failing.type, message: failing.message ?? '' }
        : warn.length
          ? { type: 'Degraded', status: 'True', reason: warn[0]!.reason, message: warn.map((x) => x.message).join('; ') }
          : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' },
    ];
  }
  const prev = capsule.status?.conditions ?? [];
  const conditions: Condition[] = conds.map((c) => {
    const p = prev.find((x) => x.type === c.type);
    return { ...c, observedGeneration: gen, lastTransitionTime: p && p.status === c.status ? p.lastTransitionTime : now };
  });
  return {
    observedGeneration: gen,
    conditions,
    // The /scale subresource's statusReplicasPath: pods that exist now (what an HPA compares with).
    replicas: ds.replicas ?? 0,
    readyReplicas: ready,
    a2aUrl: r.a2aUrl,
    configHash: r.configHash,
    selector: Object.entries(selectorLabels(capsule)).map(([k, v]) => `${k}=${v}`).join(','),
  };
}

// status.usage belongs to the usage scraper (operator/usage/): reconcile neither compares nor
// writes it (its merge patch leaves the field alone).
const strip = ({ usage: _usage, ...s }: CapsuleStatus = {}) =>
  stableJson({
    ...s,
    conditions: (s.conditions ?? [])
      .map(({ lastTransitionTime: _t, ...c }) => c)
      .sort((a, b) => a.type.localeCompare(b.type)),
  });

export function sameStatus(a: CapsuleStatus | undefined, b: CapsuleStatus | undefined): boolean {
  return strip(a) === strip(b);
}
