/**
 * kubectl for bench/density.ts: calls, the wait for a wave of Capsules to sleep (a watch, `kubectl
 * wait`, whose "condition met" lines are the progress), the client pod's log read as it is written
 * (`kubectl logs -f`) up to its final line, and what to print when a wave does not sleep.
 */
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { kubectlPath } from '../test/cluster/harness.ts';
import { CLIENT_POD, NS, WAVE_LABEL } from './density-objects.ts';

export type Kubectl = (args: string[], input?: string) => Promise<string>;

export function kubectlFor(kubeconfig: string): Kubectl {
  return (args, input) =>
    new Promise((res, rej) => {
      const child = execFile(kubectlPath(), [`--kubeconfig=${kubeconfig}`, ...args], { maxBuffer: 256 << 20 }, (err, stdout, stderr) =>
        err ? rej(new Error(`kubectl ${args.slice(0, 6).join(' ')} failed: ${String(stderr).trim() || err.message}`)) : res(String(stdout)),
      );
      if (input !== undefined) child.stdin?.end(input);
    });
}

/** Resolves when every Capsule of `wave` is Sleeping; `onMet` is called as each one is seen so. */
export function waitWaveSleeping(kubeconfig: string, wave: number, timeoutSeconds: number, onMet: () => void): Promise<void> {
  const args = [`--kubeconfig=${kubeconfig}`, '-n', NS, 'wait', 'capsule', '-l', `${WAVE_LABEL}=${wave}`];
  const child = spawn(kubectlPath(), [...args, '--for=jsonpath={.status.phase}=Sleeping', `--timeout=${timeoutSeconds}s`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  createInterface({ input: child.stdout }).on('line', (l) => {
    if (/condition met/.test(l)) onMet();
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`wave ${wave} did not sleep within ${timeoutSeconds} s: ${err.trim()}`))));
  });
}

/** The client's JSON lines (bench/density-client.mjs), handed to `onLine` as they come, until {"done":true}. */
export function followClient(kubeconfig: string, onLine: (o: Record<string, unknown>) => void): Promise<void> {
  const child = spawn(kubectlPath(), [`--kubeconfig=${kubeconfig}`, '-n', NS, 'logs', '-f', `pod/${CLIENT_POD}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    let finished = false;
    const finish = (e?: Error) => {
      if (finished) return;
      finished = true;
      child.kill();
      e ? reject(e) : resolve();
    };
    createInterface({ input: child.stdout }).on('line', (l) => {
      out += `${l}\n`;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(l);
      } catch {
        return; // not one of the client's lines (a Node warning)
      }
      if (o.fatal) return finish(new Error(`the client pod failed: ${o.fatal}`));
      if (o.done) return finish();
      onLine(o);
    });
    child.on('error', (e) => finish(e));
    child.on('close', (code) => finish(new Error(`kubectl logs -f ended (exit ${code}) before the client's final line; its output:\n${out.slice(-4000)}`)));
  });
}

/** What the Capsules of `wave` that are not Sleeping say (phase, conditions), and the namespace's warnings: printed when a wave fails. */
export async function diagnoseWave(k: Kubectl, wave: number): Promise<string> {
  // biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects as the API server sent them
  const caps = JSON.parse(await k(['-n', NS, 'get', 'capsule', '-l', `${WAVE_LABEL}=${wave}`, '-o', 'json'])).items as any[];
  const byPhase = new Map<string, number>();
  const lines: string[] = [];
  for (const c of caps) {
    const phase = c.status?.phase ?? '(none)';
    byPhase.set(phase, (byPhase.get(phase) ?? 0) + 1);
    if (phase === 'Sleeping' || lines.length >= 10) continue;
    // biome-ignore lint/suspicious/noExplicitAny: a condition as the API server sent it
    const conds = (c.status?.conditions ?? []).map((x: any) => `${x.type}=${x.status} ${x.reason ?? ''}: ${x.message ?? ''}`).join('; ');
    lines.push(`  ${c.metadata.name}: ${phase}; ${conds}`);
  }
  const warnings = await k(['-n', NS, 'get', 'events', '--field-selector', 'type=Warning', '--sort-by=.lastTimestamp']).catch((e: Error) => e.message);
  return [
    `wave ${wave}: ${[...byPhase].map(([p, n]) => `${n} ${p}`).join(', ')}`,
    ...lines,
    'warning events (latest last):',
    warnings.split('\n').slice(-25).join('\n'),
  ].join('\n');
}
