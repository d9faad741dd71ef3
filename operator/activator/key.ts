/**
 * The activator key: a random secret only the operator and the activator hold (the chart's
 * `<release>-activator-key` Secret, mounted into both Deployments as a file named by
 * CAPSULE_ACTIVATOR_KEY_FILE, not given as an environment variable: a process's environment is
 * readable to its user and is what crash reports and `kubectl describe` habits spread; checkov
 * CKV_K8S_35). CAPSULE_ACTIVATOR_KEY, the key itself, is read when no file is named. The
 * operator publishes HMAC-SHA256(key, apiKey) of each API key of a Capsule that may sleep
 * (status.sleep.apiKeyDigests); the activator checks a bearer API key against them before waking
 * the capsule (auth.ts). Both read it here, so both refuse the same bad values at start: a key
 * one side takes and the other not would leave every API-key caller of a sleeping capsule with a 401.
 */

import { readFileSync } from 'node:fs';

export const ACTIVATOR_KEY_ENV = 'CAPSULE_ACTIVATOR_KEY';
export const ACTIVATOR_KEY_FILE_ENV = 'CAPSULE_ACTIVATOR_KEY_FILE';
/** Characters; the chart makes 64 random letters and digits. */
export const MIN_ACTIVATOR_KEY_LENGTH = 32;

const FIX =
  'the chart sets it from the Secret <release>-activator-key when activator.enabled is true (helm upgrade keeps the key; delete the Secret and upgrade to make a new one)';

export class ActivatorKeyError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${message} [${code}]`);
    this.name = 'ActivatorKeyError';
  }
}

/**
 * The key's bytes (its text as UTF-8), from the file CAPSULE_ACTIVATOR_KEY_FILE names, else from
 * CAPSULE_ACTIVATOR_KEY; throws ActivatorKeyError E-OP-074 when unset or the file cannot be read,
 * E-OP-075 when not a usable key.
 */
export function activatorKeyFrom(env: Record<string, string | undefined>, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): Buffer {
  const file = env[ACTIVATOR_KEY_FILE_ENV];
  let raw = env[ACTIVATOR_KEY_ENV];
  if (file) {
    try {
      raw = read(file);
    } catch (e) {
      throw new ActivatorKeyError('E-OP-074', `${ACTIVATOR_KEY_FILE_ENV} names ${file}, which cannot be read (${(e as Error).message}); ${FIX}`);
    }
  }
  if (raw === undefined || raw === '')
    throw new ActivatorKeyError(
      'E-OP-074',
      `${ACTIVATOR_KEY_ENV} is not set: the operator and the activator need the same activator key to check API keys of sleeping Capsules; ${FIX}`,
    );
  // The value is never quoted back: it is a secret.
  if (/\s/.test(raw)) throw new ActivatorKeyError('E-OP-075', `${ACTIVATOR_KEY_ENV} holds whitespace (a pasted newline?): give the key alone; ${FIX}`);
  if (raw.length < MIN_ACTIVATOR_KEY_LENGTH)
    throw new ActivatorKeyError(
      'E-OP-075',
      `${ACTIVATOR_KEY_ENV} is ${raw.length} characters, shorter than ${MIN_ACTIVATOR_KEY_LENGTH}: use a long random key (e.g. openssl rand -hex 32); ${FIX}`,
    );
  return Buffer.from(raw, 'utf8');
}
