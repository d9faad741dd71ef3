/**
 * The Capsule CRD's share of sleeping (operator/translate/sleep.ts): `spec.sleep`, the embedded
 * store's `volumeClaim`, the status a sleeping capsule shows, and the CEL rules refusing a sleep the
 * capsule could not survive. The rules restate sleepPolicy's problems (which still report a Capsule
 * stored before them): the duration grammar is the same pattern, then CEL's own `duration()` (Go's
 * ParseDuration) for the 10s floor.
 */
import { DURATION_PATTERN, MIN_AFTER_IDLE_SECONDS } from '../translate/sleep.ts';
import { arr, DNS_LABEL, enm, obj, str, type Schema, type Validation } from './schema.ts';

const CEL_DURATION = `'${DURATION_PATTERN.replace(/\\/g, '\\\\')}'`;
const QUANTITY = '^[1-9][0-9]*(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$';
/** An explicit afterIdle that asks for sleep (not `never`). */
const ASKS = "has(self.sleep) && has(self.sleep.afterIdle) && self.sleep.afterIdle != 'never'";

export function sleepSchema(): Schema {
  return obj('Scale to zero when idle: the pods are deleted and the first request wakes the capsule (docs/operator.md, "Sleeping Capsules").', {
    afterIdle: str(
      'How long without tasks, requests or open streams before the capsule sleeps: a duration of at least 10s (30s, 15m, 1h30m) or never. Default 15m when the store survives the pod (store.postgres or store.embedded.volumeClaim); never otherwise.',
      {
        maxLength: 32,
        'x-kubernetes-validations': [
          {
            rule: `self == 'never' || (self.matches(${CEL_DURATION}) && duration(self) >= duration('${MIN_AFTER_IDLE_SECONDS}s'))`,
            messageExpression: `"invalid spec.sleep.afterIdle '" + self + "': give a duration of at least ${MIN_AFTER_IDLE_SECONDS}s such as 30s, 15m or 1h30m, or never"`,
            reason: 'FieldValueInvalid',
          },
        ],
      },
    ),
  });
}

/** `spec.store.embedded`: the SQLite store, on the emptyDir (`{}`) or on a claim. */
export function embeddedStoreSchema(): Schema {
  return obj(
    'The SQLite store (the default). {}: a file on the session emptyDir, lost with the pod. volumeClaim: on a PersistentVolumeClaim, which survives the pod, so the capsule can sleep.',
    {
      volumeClaim: obj(
        'The PersistentVolumeClaim <capsule>-store (ReadWriteOnce, owned by the Capsule: deleted with it) the store file lives on. One replica only. Its storageClassName cannot change once created (delete the claim to change it).',
        {
          storageClassName: str("StorageClass of the claim (default: the cluster's default class).", {
            pattern: DNS_LABEL.replace('[-a-z0-9]', '[-.a-z0-9]'),
            maxLength: 253,
          }),
          size: str('Requested size, e.g. 1Gi (default: workdirSizeLimit, else 1Gi).', { pattern: QUANTITY, maxLength: 32 }),
        },
      ),
    },
  );
}

/** Rules on `spec` (they read several fields). */
export function sleepSpecRules(): Validation[] {
  return [
    {
      rule: `!(${ASKS}) || (has(self.store) && (has(self.store.postgres) || (has(self.store.embedded) && has(self.store.embedded.volumeClaim))))`,
      message:
        "spec.sleep.afterIdle needs a store that survives the pod's deletion: set spec.store.embedded.volumeClaim (e.g. {size: 1Gi}) or spec.store.postgres, or afterIdle: never (the emptyDir store would lose the tasks and conversations while asleep)",
      fieldPath: '.sleep.afterIdle',
      reason: 'FieldValueForbidden',
    },
    {
      rule: '!has(self.replicas) || self.replicas <= 1 || !has(self.store) || !has(self.store.embedded) || !has(self.store.embedded.volumeClaim)',
      message: "spec.store.embedded.volumeClaim is one pod's SQLite file (a ReadWriteOnce claim): use replicas: 1, or spec.store.postgres for several replicas",
      fieldPath: '.store.embedded.volumeClaim',
      reason: 'FieldValueForbidden',
    },
  ];
}

export function phaseSchema(): Schema {
  return enm(
    "What the capsule is doing (kubectl get's State): Pending (no pod ready yet), Ready, Sleeping (scaled to zero; the activator answers), Waking (a request woke it; held until a pod is ready), Failed.",
    ['Pending', 'Ready', 'Sleeping', 'Waking', 'Failed'],
  );
}

export function sleepStatusSchema(): Schema {
  return obj('Sleep bookkeeping, written by the operator.', {
    since: str('When the capsule was put to sleep (absent while awake).', { format: 'date-time' }),
    lastWake: str('When the last wake was requested.', { format: 'date-time' }),
    agentCard: str('The agent card JSON fetched from a ready pod right before sleeping; the activator serves it while the capsule sleeps.', {
      maxLength: 32768,
    }),
    apiKeyDigests: arr(
      'While the capsule may sleep and takes API keys (spec.a2a.auth.apiKeys): HMAC-SHA256 of each key of that Secret, keyed with the activator key, hex, sorted. The activator checks a bearer API key against them before waking the capsule, so it never reads the Secret. Safe to show: without the activator key (a Secret only the operator and the activator read) they cannot be tested against guessed keys.',
      str('One digest: 64 lowercase hex characters.', { pattern: '^[0-9a-f]{64}$', maxLength: 64 }),
    ),
  });
}
