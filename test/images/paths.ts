/** Where the image harness keeps its engine and images (see engine.sh, build.sh). */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

export const ROOT = PROJECT_ROOT;
export const IMAGES_CACHE = process.env.CAPSULE_IMAGES_CACHE ?? join(ROOT, '.cache', 'images');
export const ENGINE_DIR = process.env.CAPSULE_ENGINE_DIR ?? join(ROOT, '.cache', 'images', 'engine');
export const ENGINE_SOCKET = join(ENGINE_DIR, 'docker.sock');
export const IMAGES_ENV = join(IMAGES_CACHE, 'images.env');
/** Debian's CLI, matching its daemon (a newer docker CLI on PATH may want buildx). */
export const DOCKER = process.env.DOCKER ?? '/usr/bin/docker';

export function engineAnswers(): boolean {
  const r = spawnSync(DOCKER, ['version', '--format', '{{.Server.Version}}'], {
    env: { ...process.env, DOCKER_HOST: `unix://${ENGINE_SOCKET}` },
    stdio: 'ignore',
    timeout: 10_000,
  });
  return r.status === 0;
}
