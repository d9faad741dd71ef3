/**
 * Where a capsule is staged from and into: its registry and work root by default, and stage()
 * itself. Apart from open.ts (which re-exports these), so a command that only stages — `mur run` of
 * a script capsule, `mur sessions` — does not load the agent loop, its MCP client and hooks.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { stageCapsule, type StagedCapsule } from '../session/stage.ts';

export interface OpenOptions {
  capsuleDir: string;
  registryDir?: string;
  workRoot?: string;
  hostEnv?: NodeJS.ProcessEnv;
}

/** Registry: --registry, else <capsule>/registry, else $MURMUR_REGISTRY, else ~/.murmur/registry. */
export function defaultRegistry(capsuleDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const local = join(capsuleDir, 'registry');
  if (existsSync(local)) return local;
  return env.MURMUR_REGISTRY ?? join(homedir(), '.murmur', 'registry');
}

export function defaultWorkRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.MURMUR_WORK_ROOT ?? join(homedir(), '.murmur', 'sessions');
}

export async function stage(o: OpenOptions): Promise<StagedCapsule> {
  const capsuleDir = resolve(o.capsuleDir);
  return stageCapsule({
    capsuleDir,
    registryDir: resolve(o.registryDir ?? defaultRegistry(capsuleDir, o.hostEnv)),
    workRoot: resolve(o.workRoot ?? defaultWorkRoot(o.hostEnv)),
  });
}
