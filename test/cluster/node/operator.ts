// The operator on the real node: the runtime and operator images built from the Dockerfiles by
// test/images/build.sh (docker save archives under .cache/images/), imported into the node's
// containerd, and the chart installed with helm under its own RBAC, pulling nothing.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helmPath, kubectlPath } from '../harness.ts';
import { repoRoot } from './config.ts';

export const imagesDir = process.env.CAPSULE_IMAGES_DIR ?? join(repoRoot, '.cache', 'images');
export const imagesBuildScript = join(repoRoot, 'test', 'images', 'build.sh');
export const operatorNamespace = 'capsule-system';
export const releaseName = 'capsule-operator';

/** What test/images/build.sh wrote to images.env (image names and archive paths). */
function imagesEnv(): Record<string, string> {
  const f = join(imagesDir, 'images.env');
  if (!existsSync(f)) return {};
  return Object.fromEntries(
    readFileSync(f, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}
/** The runtime image as the pods name it (capsule-runtime:dev unless images.env says otherwise). */
export const runtimeImage = (): string => imagesEnv().CAPSULE_RUNTIME_IMAGE ?? process.env.CAPSULE_RUNTIME_IMAGE ?? 'capsule-runtime:dev';
export const operatorImage = (): string => imagesEnv().CAPSULE_OPERATOR_IMAGE ?? process.env.CAPSULE_OPERATOR_IMAGE ?? 'capsule-operator:dev';
const split = (ref: string): { repository: string; tag: string } => {
  const i = ref.lastIndexOf(':');
  return i > ref.lastIndexOf('/') ? { repository: ref.slice(0, i), tag: ref.slice(i + 1) } : { repository: ref, tag: 'latest' };
};

/** The image archives to import (docker save). Throws saying how to make them. */
export function operatorImages(): string[] {
  const env = imagesEnv();
  const tars = [env.CAPSULE_RUNTIME_TAR ?? join(imagesDir, 'capsule-runtime.tar'), env.CAPSULE_OPERATOR_TAR ?? join(imagesDir, 'capsule-operator.tar')];
  const missing = tars.filter((t) => !existsSync(t));
  if (missing.length) {
    throw new Error(
      `image archives missing: ${missing.join(', ')} — build them with ${imagesBuildScript} ` +
        '(Docker engine, the runtime and operator images from Dockerfile and operator/Dockerfile, `docker save` into .cache/images/)',
    );
  }
  return tars;
}

/** Runs test/images/build.sh (idempotent) so operatorImages() finds the archives. */
export async function ensureImages(log: (m: string) => void): Promise<void> {
  // archives made elsewhere (CAPSULE_IMAGES_DIR holding images.env and the .tar files): used as they are
  if (!existsSync(imagesBuildScript) || process.env.CAPSULE_IMAGES_DIR) {
    operatorImages(); // throws, naming what is missing, unless the archives were made some other way
    return;
  }
  const code = await new Promise<number>((res, rej) => {
    const c = spawn('bash', [imagesBuildScript], { stdio: ['ignore', 'inherit', 'inherit'] });
    c.on('error', rej);
    c.on('exit', (code, sig) => res(code ?? (sig ? 128 : 1)));
  });
  if (code !== 0) throw new Error(`${imagesBuildScript} failed with exit code ${code} (see its output above)`);
  log(`images ready in ${imagesDir}`);
}

/** helm install of the chart (its CRDs, RBAC, Deployment) with the local images; waits for the rollout. */
export function installOperator(kubeconfig: string, log: (m: string) => void, extraSet: string[] = []): void {
  const t0 = Date.now();
  const chart = join(repoRoot, 'charts', 'capsule-operator');
  const env = {
    ...process.env,
    KUBECONFIG: kubeconfig,
    HELM_CACHE_HOME: join(repoRoot, '.cache', 'helm'),
    HELM_CONFIG_HOME: join(repoRoot, '.cache', 'helm'),
    HELM_DATA_HOME: join(repoRoot, '.cache', 'helm'),
  };
  execFileSync(
    helmPath(),
    [
      'upgrade',
      '--install',
      releaseName,
      chart,
      '--namespace',
      operatorNamespace,
      '--create-namespace',
      '--set',
      `image.repository=${split(operatorImage()).repository}`,
      '--set',
      `image.tag=${split(operatorImage()).tag}`,
      '--set',
      `runtime.image.repository=${split(runtimeImage()).repository}`,
      '--set',
      `runtime.image.tag=${split(runtimeImage()).tag}`,
      '--set',
      'image.pullPolicy=Never',
      '--set',
      'runtime.image.pullPolicy=Never',
      // scrape quickly so `kubectl get capsules` shows tokens within a test
      '--set',
      'usage.scrapeIntervalSeconds=2',
      // every namespace: the tests (and whoever tries capsules by hand) make their own namespaces
      '--set',
      'clusterWide=true',
      '--set-json',
      'watchNamespaces=[]',
      ...extraSet.flatMap((s) => ['--set', s]),
      '--wait',
      '--timeout',
      '180s',
    ],
    { env, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  execFileSync(kubectlPath(), ['-n', operatorNamespace, 'rollout', 'status', `deployment/${releaseName}`, '--timeout=180s'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  log(`operator installed (helm) and rolled out in ${Date.now() - t0} ms`);
}
