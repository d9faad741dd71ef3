// Issue 41 §1 on the real node: `mur send capsule/<name>` and `mur tasks` from outside the cluster,
// as a user tries a Capsule after `kubectl apply` — the Capsule read through the kubeconfig, a
// token of the namespace's default ServiceAccount for its URL, a port-forward to its pod opened and
// closed by mur. The real API server's RBAC and pod checks are in test/operator/mur-client.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { main } from '../../runtime/cli/main.ts';
import { apiKeySecret, apply, createNamespace, deleteNamespace, kubeconfig, providerPod, readExample, waitFor } from './support.ts';

async function mur(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    args,
    (s) => out.push(s),
    (s) => err.push(s),
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('mur send to a Capsule on the real node', () => {
  const ns = 'rn-mur-client';
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
    const provider = await providerPod(ns, { turns: [{ text: 'Hello from the pod, through a port-forward.' }], onExhausted: 'repeat-last' });
    const capsule = parse(readExample('quickstart.yaml'));
    capsule.metadata.namespace = ns;
    capsule.spec.inference.endpoint = provider;
    await apply(stringify(capsule));
    await waitFor(ns, 'capsule/assistant', 'condition=Ready', '180s');
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  it('sends a task to capsule/assistant -n <ns> and prints its answer; mur tasks lists it', async () => {
    const r = await mur(['send', 'capsule/assistant', '-n', ns, 'Say hello.', '--kubeconfig', kubeconfig()]);
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    expect(r.err).toMatch(
      new RegExp(
        `capsule/assistant \\(${ns}\\): http://assistant\\.${ns}\\.svc\\.cluster\\.local:8080 through a port-forward to pod assistant-\\S+ at http://127\\.0\\.0\\.1:\\d+/`,
      ),
    );
    expect(r.out).toContain('■ task completed');
    // Printed once: as its chunks stream in (before the final status), or after it when none did.
    expect(r.out.split('\n').filter((l) => l === 'Hello from the pod, through a port-forward.')).toHaveLength(1);
    const taskId = /^▶ task (\S+)/m.exec(r.out)![1]!;
    // The same caller (the default ServiceAccount) sees its task.
    const list = await mur(['tasks', 'capsule/assistant', '-n', ns, 'list', '--json', '--kubeconfig', kubeconfig()]);
    expect(list.code, list.err).toBe(0);
    expect(JSON.parse(list.out).tasks).toContainEqual(expect.objectContaining({ taskId, state: 'completed' }));
  });
});
