/** Shared helpers for the operator tests on the real API server (project 'operator'). */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeEach, inject } from 'vitest';
import { KubeClient } from '../../operator/kube/client.ts';
import { startOperator, type Operator, type OperatorConfig } from '../../operator/operator.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { helmPath, kubectlPath, repoRoot } from '../cluster/harness.ts';

const run = promisify(execFile);
export const kubeconfig = inject('kubeconfig');
export const cluster = inject('cluster');
export const client = KubeClient.fromFile(kubeconfig);
export { repoRoot };

export async function kubectl(args: string[], input?: string): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(kubectlPath(), args, { env: { ...process.env, KUBECONFIG: kubeconfig } }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
    if (input !== undefined) {
      child.stdin!.write(input);
      child.stdin!.end();
    }
  });
}

/** kubectl that must succeed: a refused or failed command throws with its arguments and stderr. */
export async function kubectlOk(args: string[], input?: string): Promise<string> {
  const r = await kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (exit ${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

export async function helm(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(helmPath(), args, { env: { ...process.env, KUBECONFIG: kubeconfig }, maxBuffer: 32 << 20 });
    return { stdout, stderr, code: 0 };
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string; code?: number };
    return { stdout: x.stdout ?? '', stderr: x.stderr ?? '', code: typeof x.code === 'number' ? x.code : 1 };
  }
}

/**
 * What the running test is waiting for, and the operator's last log lines: printed when a test
 * fails, because a 60-s test timeout alone names neither the wait that never came true nor why
 * (the operator's log is silent unless OPERATOR_TEST_LOG is set).
 */
interface Waiting {
  what: string;
  since: number;
  last?: unknown;
}
let waitingFor: Waiting | undefined;
const operatorLog: string[] = [];
const OPERATOR_LOG_KEPT = 200;
beforeEach(({ onTestFailed, task }) => {
  onTestFailed(() => {
    const lines = [`--- ${task.name}`];
    if (waitingFor)
      lines.push(
        `waiting for: ${waitingFor.what} (for ${Date.now() - waitingFor.since} ms${waitingFor.last ? `; last error: ${String(waitingFor.last)}` : ''})`,
      );
    if (operatorLog.length) lines.push(`operator log, last ${operatorLog.length} lines:`, ...operatorLog);
    process.stderr.write(`${lines.join('\n')}\n`);
  });
});

/**
 * Runs `wait`, recorded as what the test waits for (see above); `wait` may note its last error on
 * the record. A wait inside another hands the record back to the outer one when it ends.
 */
export async function waiting<T>(what: string, wait: (record: Waiting) => Promise<T>): Promise<T> {
  const mine: Waiting = { what, since: Date.now() };
  const outer = waitingFor;
  waitingFor = mine;
  try {
    return await wait(mine);
  } finally {
    if (waitingFor === mine) waitingFor = outer;
  }
}

/** `passes` full resync passes of a controller, one after another (each resolves when every key was reconciled once). */
export async function resynced(ctrl: { resyncNow(): Promise<number> }, passes = 1): Promise<void> {
  await waiting(`${passes} resync pass${passes === 1 ? '' : 'es'}`, async () => {
    for (let i = 0; i < passes; i++) await ctrl.resyncNow();
  });
}

/**
 * Polls `fn` until it returns a truthy value (returned) or throws past the deadline. `undefined`,
 * `null`, `false`, `0` and `''` all mean "not yet": a check that wants a count of zero returns
 * `n === 0`, not `n`.
 */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 60_000,
  stepMs = 150,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  return waiting(what, async (record) => {
    for (;;) {
      try {
        const v = await fn();
        if (v) return v as T;
      } catch (e) {
        record.last = e;
      }
      if (Date.now() > deadline) throw new Error(`timed out: ${what}${record.last ? ` (last error: ${String(record.last)})` : ''}`);
      await new Promise((r) => setTimeout(r, stepMs));
    }
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let crdsReady: Promise<void> | undefined;
/** Applies crds/*.yaml (server-side) once per worker and waits until both are Established. */
export function ensureCrds(): Promise<void> {
  crdsReady ??= (async () => {
    const r = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')]);
    if (r.code !== 0) throw new Error(`applying CRDs failed: ${r.stderr}`);
    for (const name of ['capsules.murmur.io', 'hooks.murmur.io']) {
      await eventually(`${name} Established`, async () => {
        const crd = await client.get<any>(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        return crd?.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True');
      });
    }
    // Discovery catches up a little after Established.
    await eventually('capsules listable', async () => (await client.list('/apis/murmur.io/v1alpha1/capsules'), true));
  })();
  return crdsReady;
}

export async function newNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}

export async function deleteNamespace(name: string): Promise<void> {
  await client.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(() => {});
}

/** The examples, with the namespace they name rewritten to `ns`. */
export function example(file: string, ns: string): string {
  return readFileSync(join(repoRoot, 'examples', 'k8s', file), 'utf8').replaceAll('capsule://default/', `capsule://${ns}/`);
}

export async function operator(ns: string[], over: Partial<OperatorConfig> = {}): Promise<Operator> {
  return startOperator({
    client,
    translate: defaultOptions(),
    namespaces: ns,
    // Each test's operator sees only its own namespaces: a cluster-wide Capsule watch would tell
    // every other test's Capsules they are not watched (many-namespaces.test.ts turns it on).
    clusterCapsules: false,
    workers: 4,
    resyncMs: 0,
    defaultMetrics: false,
    log: (m) => {
      const line = `[op ${new Date().toISOString()}] ${m}`;
      if (process.env.OPERATOR_TEST_LOG) process.stderr.write(`${line}\n`);
      operatorLog.push(line);
      if (operatorLog.length > OPERATOR_LOG_KEPT) operatorLog.shift();
    },
    ...over,
  });
}

export async function getJson<T = any>(path: string): Promise<T | undefined> {
  return client.get<any>(path) as Promise<T | undefined>;
}
