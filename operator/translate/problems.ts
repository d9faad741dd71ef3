/**
 * What translate reports besides objects: the problems that stop or degrade a Capsule and their
 * stable codes. A leaf of the folder, so the parts of translate (store.ts, index.ts …) share the
 * shape without importing each other.
 */

export type ProblemReason =
  | 'MissingSecret'
  | 'MissingSecretKey'
  | 'MissingHook'
  | 'InvalidArtifact'
  | 'InvalidNetworkAllow'
  | 'PeerNotFound'
  | 'NotServable'
  | 'MissingEndpoint'
  | 'InvalidManifest'
  | 'WriteRefused'
  | 'SharedStoreRequired'
  | 'InvalidMcpServer'
  | 'McpServiceNotFound'
  | 'McpServiceUnusable'
  | 'InvalidSleep'
  | 'SleepNeedsDurableStore'
  | 'StoreClaimReplicas';

/** Stable codes (docs/errors.md, "Operator (E-OP-*)"). */
export const PROBLEM_CODES: Record<ProblemReason, string> = {
  MissingSecret: 'E-OP-001',
  MissingSecretKey: 'E-OP-002',
  MissingHook: 'E-OP-003',
  InvalidArtifact: 'E-OP-004',
  InvalidNetworkAllow: 'E-OP-005',
  PeerNotFound: 'E-OP-006',
  NotServable: 'E-OP-007',
  MissingEndpoint: 'E-OP-008',
  InvalidManifest: 'E-OP-009',
  WriteRefused: 'E-OP-012',
  SharedStoreRequired: 'E-OP-016',
  InvalidMcpServer: 'E-OP-045',
  McpServiceNotFound: 'E-OP-046',
  McpServiceUnusable: 'E-OP-047',
  InvalidSleep: 'E-OP-050',
  SleepNeedsDurableStore: 'E-OP-051',
  StoreClaimReplicas: 'E-OP-053',
};

/** Admission refusals (the CRDs' CEL rules put these codes in their messages). */
export const ADMISSION_CODES = { hook: 'E-OP-010', capsule: 'E-OP-011' } as const;

export interface Problem {
  reason: ProblemReason;
  message: string;
  /** Fatal problems stop the apply (the last good objects stay); others only degrade. */
  fatal: boolean;
  field?: string;
}
