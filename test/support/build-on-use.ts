/**
 * Builds what a test file needs from outside the repository on its first use, the way the cluster
 * and image global setups do: the OCI registry and oras (test/oci/build.sh, Go module proxy), the
 * Python A2A SDK's venv (test/interop/build.sh, PyPI), and promtool and prometheus
 * (test/prometheus/build.sh, Go module proxy). Each script is a no-op when its cache is
 * current, waits for a concurrent run of itself (flock), and prints a line per step to stderr,
 * which vitest passes through while the build runs. A missing toolchain fails the suite saying
 * what to install; it never skips.
 *
 * A cold build runs longer than the project's hookTimeout: call these from a beforeAll of their
 * own with BUILD_TIMEOUT_MS. `.ci/run` runs the same scripts first as timed steps, so there they
 * find everything current.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

/** The hook timeout of a build-on-first-use beforeAll: a cold OCI build took ~17 min on 2 loaded cores. */
export const BUILD_TIMEOUT_MS = 60 * 60_000;

export const OCI_BIN = process.env.OCI_BIN_DIR ?? path.join(PROJECT_ROOT, '.cache', 'oci', 'bin');
export const A2A_PY_DIR = process.env.A2A_PY_DIR ?? path.join(PROJECT_ROOT, '.cache', 'a2a-py');

/** Runs `bash <script>` with its output on this process's stderr; rejects naming the script and why. */
async function runBuild(script: string, env: Record<string, string>, missingTool: string): Promise<void> {
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn('bash', [path.join(PROJECT_ROOT, script)], { stdio: ['ignore', 2, 2], env: { ...process.env, ...env } });
    child.on('error', reject);
    child.on('exit', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  if (code === 2) throw new Error(`${script}: ${missingTool}`);
  if (code !== 0) throw new Error(`${script} failed with exit code ${code} (its output is above)`);
}

/** The CNCF distribution registry and oras in OCI_BIN, built from the Go module proxy when missing. */
export function ensureOciTools(): Promise<void> {
  return runBuild(
    'test/oci/build.sh',
    { OCI_BIN_DIR: OCI_BIN },
    'Go (>= 1.26) is not installed; the OCI tests build the CNCF distribution registry and oras with it from the Go module proxy',
  );
}

/** The Python A2A SDK's venv in A2A_PY_DIR, installed from PyPI when missing. */
export function ensurePythonSdk(): Promise<void> {
  return runBuild(
    'test/interop/build.sh',
    { A2A_PY_DIR },
    'python3 with the venv module is not installed; the interop suite installs the official a2a-sdk from PyPI into a venv with it',
  );
}

export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN_DIR ?? path.join(PROJECT_ROOT, '.cache', 'prometheus', 'bin');

/** promtool and prometheus in PROMETHEUS_BIN, built from the Go module proxy when missing. */
export function ensurePrometheus(): Promise<void> {
  return runBuild(
    'test/prometheus/build.sh',
    { PROMETHEUS_BIN_DIR: PROMETHEUS_BIN },
    "Go (>= 1.26) is not installed; the chart's alert and dashboard tests build promtool and prometheus with it from the Go module proxy",
  );
}
