// Issue 12 §3 on the real node: a `Hook` (a policy hook: binding on-shell, commit_policy deny)
// denies a shell command inside a real capsule pod. The hook is the always-deny fixture
// (test/fixtures/components/hook-deny-shell) served as a bare component (`source: {url, sha256}`
// from a fixtures pod, no murmur.yaml of its own): the Hook's contract is the only place the policy
// is written, so the operator must render it into the capsule's murmur.yaml and the runtime must run
// the bare component under it (a bare component once ran as an all-events observer and the command
// went through).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  apiKeySecret,
  apply,
  callerToken,
  clientPod,
  createNamespace,
  deleteNamespace,
  fixturePod,
  messageSend,
  policyAdmits,
  serviceAnswers,
  providerPod,
  recordedRequests,
  waitFor,
  wgetPost,
  shellGuardHook,
} from './support.ts';

const ns = 'rn-hook';
const component = 'hook-deny-shell.wasm';

describe('a policy Hook in a real pod', () => {
  let exec: Awaited<ReturnType<typeof clientPod>>;
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
    const [files, provider] = await Promise.all([
      fixturePod(ns, [component]),
      providerPod(ns, { turns: [{ toolCalls: [{ name: 'echo', input: { command: 'forbidden-marker' } }] }, { text: 'The shell was refused.' }] }),
    ]);
    await apply(shellGuardHook(ns, files[component]!));
    await apply(
      stringify({
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'guarded', namespace: ns },
        spec: {
          version: '1.0.0',
          artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
          capabilities: { shell: { allow: ['echo'] } },
          hooks: [{ name: 'shell-guard' }],
          inference: {
            driver: { artifact: 'driver-anthropic' },
            model: 'claude-sonnet-4-5',
            endpoint: provider,
            max_turns: 4,
            max_tokens: 1024,
            system_prompt: 'You run echo.',
            apiKeySecretRef: { name: 'anthropic-key', key: 'api-key' },
          },
          ingress: { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
        },
      }),
    );
    await waitFor(ns, 'capsule/guarded', 'condition=Ready', '180s');
    exec = await clientPod(ns, 'client', { role: 'client' });
    await policyAdmits(ns, 'client');
    await serviceAnswers(exec, ns, 'guarded');
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  it('a Hook (binding on-shell, commit_policy deny) over a bare .wasm denies a shell command inside the pod; the model reads the refusal', async () => {
    await waitFor(ns, 'hook/shell-guard', 'condition=Accepted');
    const url = 'http://guarded.rn-hook.svc.cluster.local:8080/';
    const r = await exec(wgetPost(url, messageSend('Run echo.'), 60, await callerToken(ns, url)));
    expect(r.code, r.out).toBe(0);
    const body = JSON.parse(r.out);
    expect(body.result.status.state, r.out).toBe('completed');
    expect(JSON.stringify(body.result)).toContain('The shell was refused.');
    // the second inference request carries the tool result: an error naming the hook's reason, no echo output
    const reqs = await recordedRequests(ns);
    const toolResult = JSON.stringify(reqs[1]?.body?.messages?.at(-1));
    expect(toolResult).toContain('"is_error":true');
    expect(toolResult).toContain('shell-guard: ');
    expect(toolResult).toContain('is not allowed in this capsule');
    expect(toolResult).not.toMatch(/"forbidden-marker\\n"/);
  });
});
