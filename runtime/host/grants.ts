/**
 * Turns an artifact's effective grant (manifest capabilities, narrowed per artifact) into the
 * component host's per-instance Grants. The guest's environment is built from the host's only for
 * names the grant allows, and credential-shaped names are never passed even when allowed.
 */
import { join, resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Grants } from './protocol.ts';
import type { EffectiveGrant } from '../manifest/capsule.ts';
import { isStrippedEnvName } from '../shell/env.ts';

export function guestEnv(allow: readonly string[], hostEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of allow) {
    const v = hostEnv[name];
    if (v !== undefined && !isStrippedEnvName(name)) env[name] = v;
  }
  return env;
}

/** Network entries a WASM HTTP grant can use (`capsule://` peers are resolved by the operator). */
export function httpAllow(allow: readonly string[]): string[] {
  return allow.filter((a) => !a.startsWith('capsule://'));
}

/**
 * The directory a component's own `.` is (its preopen): the session workdir narrowed by
 * `filesystem.scope`; none without a filesystem grant.
 */
export function scopeDir(grant: EffectiveGrant, workdir: string): string | undefined {
  return grant.filesystem.scope === null ? undefined : resolve(workdir, grant.filesystem.scope || '.');
}

export function grantsFor(grant: EffectiveGrant, workdir: string, logFile: string, extraEnv: Record<string, string> = {}): Grants {
  const preopen = scopeDir(grant, workdir);
  if (preopen) mkdirSync(preopen, { recursive: true });
  return {
    preopen,
    env: { ...guestEnv(grant.env.allow), ...extraEnv },
    networkAllow: httpAllow(grant.network.allow),
    logFile,
  };
}

export function logFileFor(workdir: string, kind: 'tool' | 'driver' | 'hook' | 'capsule', name: string): string {
  return join(workdir, 'logs', `${kind}-${name}.log`);
}
