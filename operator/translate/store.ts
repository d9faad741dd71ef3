/**
 * The Capsule's store (spec.store) as the pods get it. Embedded (the default): nothing to render;
 * `mur serve` keeps a SQLite file on the session volume (the `workdir` emptyDir: it survives
 * container restarts, not pod deletion) and falls back to memory, saying so, where the image has
 * no SQLite engine. PostgreSQL: the URL reaches the runtime only as the env var MURMUR_STORE from
 * the Secret (the operator never reads it: SecretInfo has key names only), and the server's
 * address opens the egress NetworkPolicy. More than one replica needs the shared store: admission
 * refuses it (CEL), and this check reports it too for whatever got past admission (a Capsule
 * stored before the rule, or a /scale write). The embedded store on a volumeClaim (builders/
 * store-claim.ts) is one pod's too: a ReadWriteOnce claim.
 */
import type { CapsuleSpec, SecretInfo } from '../api/types.ts';
import type { Problem } from './problems.ts';

export interface StoreRendering {
  problems: Problem[];
  /** Secret resourceVersion of the URL (in the config hash: a rotated URL rolls the pods). */
  secretVersion?: string;
  /** The server's address, for the egress policy. */
  egress?: string;
  /** Env of the runtime container. */
  env: Record<string, unknown>[];
}

export function renderStore(spec: CapsuleSpec, secrets: Record<string, SecretInfo | undefined>, ns: string): StoreRendering {
  const problems: Problem[] = [];
  const pg = spec.store?.postgres;
  if ((spec.replicas ?? 1) > 1 && !pg) {
    problems.push({
      reason: 'SharedStoreRequired',
      fatal: true,
      field: 'spec.replicas',
      message: `replicas ${spec.replicas} needs the shared store: set spec.store.postgres (with the embedded store each pod keeps its own tasks, so tasks/get, cancel and input replies the Service routes to another pod would fail)`,
    });
  }
  if ((spec.replicas ?? 1) > 1 && spec.store?.embedded?.volumeClaim) {
    problems.push({
      reason: 'StoreClaimReplicas',
      fatal: true,
      field: 'spec.store.embedded.volumeClaim',
      message: `replicas ${spec.replicas} cannot share spec.store.embedded.volumeClaim: the claim is ReadWriteOnce, one pod's SQLite file; use replicas: 1, or spec.store.postgres for several replicas`,
    });
  }
  if (!pg) return { problems, env: [] };
  const ref = pg.urlSecretRef;
  const s = secrets[ref.name];
  let secretVersion: string | undefined;
  if (!s)
    problems.push({
      reason: 'MissingSecret',
      fatal: true,
      field: 'spec.store.postgres.urlSecretRef',
      message: `Secret '${ref.name}' (store.postgres.urlSecretRef) not found in namespace '${ns}'; create it with the postgresql:// URL under key '${ref.key}'`,
    });
  else if (!s.keys.includes(ref.key))
    problems.push({
      reason: 'MissingSecretKey',
      fatal: true,
      field: 'spec.store.postgres.urlSecretRef.key',
      message: `Secret '${ref.name}' has no key '${ref.key}' (keys: ${s.keys.join(', ') || 'none'})`,
    });
  else secretVersion = s.resourceVersion;
  return {
    problems,
    ...(secretVersion !== undefined ? { secretVersion } : {}),
    egress: pg.address,
    env: [{ name: 'MURMUR_STORE', valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } }],
  };
}
