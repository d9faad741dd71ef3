/**
 * vitest globalSetup of the `images` project: starts the Docker engine (test/images/engine.sh:
 * Debian's docker.io, a dockerd of its own) unless ours already answers, builds or loads the images
 * (test/images/build.sh, cached by a hash of their inputs), and hands the tests DOCKER_HOST and the
 * image names through the environment the test workers inherit. Stops the engine at the end if it
 * started it (by the pid it recorded). Where the engine cannot run (not Linux, not root), it throws
 * saying why: the suite fails, it never skips.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { engineAnswers, ENGINE_SOCKET, IMAGES_ENV, ROOT } from './paths.ts';

function run(script: string, env: Record<string, string> = {}): void {
  const r = spawnSync('bash', [join(ROOT, 'test/images', script), ...(script === 'engine.sh' ? ['start'] : [])], {
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`test/images/${script} failed (exit ${r.status}); its output is above`);
}

export default function setup(): () => void {
  if (process.platform !== 'linux') throw new Error(`the images suite needs Linux to run a Docker engine (this is ${process.platform})`);
  if (process.getuid?.() !== 0) throw new Error('the images suite needs root: it installs docker.io (apt-get) and starts its own dockerd');
  const started = !engineAnswers();
  if (started) run('engine.sh');
  run('build.sh', { CAPSULE_IMAGES_LOAD: '1', CAPSULE_ENGINE_KEEP: '1' });
  if (!existsSync(IMAGES_ENV)) throw new Error(`build.sh wrote no ${IMAGES_ENV}`);
  const saved = {
    DOCKER_HOST: process.env.DOCKER_HOST,
    TESTCONTAINERS_RYUK_DISABLED: process.env.TESTCONTAINERS_RYUK_DISABLED,
    TESTCONTAINERS_HOST_OVERRIDE: process.env.TESTCONTAINERS_HOST_OVERRIDE,
  };
  process.env.DOCKER_HOST = `unix://${ENGINE_SOCKET}`;
  // Ryuk (testcontainers' reaper) is an image from a registry this machine cannot reach; each
  // test stops what it starts, and the engine this setup started is stopped below.
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  // Published ports are reached on loopback. (This machine has a /.dockerenv, so testcontainers
  // would take itself to be inside a container and look for the engine's default `bridge`
  // network, which this engine does not have.)
  process.env.TESTCONTAINERS_HOST_OVERRIDE = '127.0.0.1';
  for (const line of readFileSync(IMAGES_ENV, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) process.env[m[1]!] = m[2]!;
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    if (started) spawnSync('bash', [join(ROOT, 'test/images/engine.sh'), 'stop'], { stdio: 'inherit' });
  };
}
