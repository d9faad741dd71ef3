/**
 * The embedded store on a PersistentVolumeClaim (`spec.store.embedded.volumeClaim`): the claim
 * `<capsule>-store`, owned by the Capsule (deleted with it), mounted at STORE_DIR, where `--store`
 * puts the SQLite file. Only the store moves there: the session workdirs (a copy of each component
 * per start), the artifact cache and HOME stay on the workdir emptyDir, so a capsule that wakes
 * hundreds of times does not fill its claim with stale sessions.
 *
 * ReadWriteOnce: one pod's file (more than one replica needs store.postgres, and admission refuses a
 * claim with replicas > 1). The pods' fsGroup makes the volume writable by the runtime's user.
 */
import type { Capsule, KubeObject } from '../../api/types.ts';
import { meta, names } from './common.ts';
import { workdirSize } from './storage.ts';

export const STORE_DIR = '/var/lib/murmur-store';
export const STORE_FILE = `${STORE_DIR}/store.db`;

/** The claim, or undefined when the store is not on one. */
export function buildStoreClaim(c: Capsule): KubeObject | undefined {
  const claim = c.spec.store?.embedded?.volumeClaim;
  if (!claim) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: meta(c, names(c).storeClaim),
    spec: {
      accessModes: ['ReadWriteOnce'],
      ...(claim.storageClassName !== undefined ? { storageClassName: claim.storageClassName } : {}),
      // Default: the workdir's size (spec.workdirSizeLimit, else 1Gi), the room the store had on the emptyDir.
      resources: { requests: { storage: claim.size ?? workdirSize(c) } },
    },
  };
}

/** The Deployment's share of the claim: its volume, its mount and the `--store` argument (none without a claim). */
export function storeClaimFragments(c: Capsule): { volumes: Record<string, unknown>[]; mounts: Record<string, unknown>[]; args: string[] } {
  if (!c.spec.store?.embedded?.volumeClaim) return { volumes: [], mounts: [], args: [] };
  return {
    volumes: [{ name: 'store', persistentVolumeClaim: { claimName: names(c).storeClaim } }],
    mounts: [{ name: 'store', mountPath: STORE_DIR }],
    args: ['--store', `sqlite:${STORE_FILE}`],
  };
}
