/**
 * The activator's configuration from its environment (the chart sets it, templates/activator-deployment.yaml):
 *   MURMUR_ACTIVATOR_PORT           requests, HTTP/1.1 and h2c (default 8012)
 *   MURMUR_ACTIVATOR_METRICS_PORT   /metrics, /healthz, /readyz (default 9090)
 *   MURMUR_ACTIVATOR_HOLD_SECONDS   how long a request is held while its capsule wakes (default 60)
 *   WATCH_NAMESPACES                comma-separated, the operator's own list; empty = all namespaces
 *   CLUSTER_DOMAIN                  default cluster.local (Host names `<svc>.<ns>.svc.<domain>`)
 *   POD_NAME                        the reporting instance of its Events
 *   CAPSULE_ACTIVATOR_KEY_FILE      the file holding the activator key the operator's API-key digests are made with (key.ts; or CAPSULE_ACTIVATOR_KEY)
 * A value that is not what it should be stops the activator at start with the variable's name.
 */
import { CODES } from './errors.ts';
import { activatorKeyFrom, ActivatorKeyError } from './key.ts';

export interface ActivatorEnv {
  port: number;
  metricsPort: number;
  holdSeconds: number;
  namespaces: string[];
  clusterDomain: string;
  /** The activator key (key.ts): bearer API keys are checked against the Capsule's status.sleep.apiKeyDigests with it. */
  apiKeyDigestKey: Buffer;
}

export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${CODES.config} ${name}=${JSON.stringify(raw)}: want a whole number from ${min} to ${max} (default ${dflt})`);
  }
  return n;
}

export function activatorEnv(env: NodeJS.ProcessEnv): ActivatorEnv {
  const namespaces = (env.WATCH_NAMESPACES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = namespaces.find((ns) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns));
  if (bad !== undefined) throw new ConfigError(`${CODES.config} WATCH_NAMESPACES: ${JSON.stringify(bad)} is not a namespace name`);
  let apiKeyDigestKey: Buffer;
  try {
    apiKeyDigestKey = activatorKeyFrom(env);
  } catch (e) {
    throw e instanceof ActivatorKeyError ? new ConfigError(e.message) : e;
  }
  return {
    port: integer(env, 'MURMUR_ACTIVATOR_PORT', 8012, 1, 65535),
    metricsPort: integer(env, 'MURMUR_ACTIVATOR_METRICS_PORT', 9090, 1, 65535),
    holdSeconds: integer(env, 'MURMUR_ACTIVATOR_HOLD_SECONDS', 60, 1, 3600),
    namespaces,
    clusterDomain: env.CLUSTER_DOMAIN || 'cluster.local',
    apiKeyDigestKey,
  };
}
