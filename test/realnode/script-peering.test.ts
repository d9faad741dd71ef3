// Issue 12 §3 on the real node: peering through a SCRIPT capsule's `murmur:message/send`. Capsule A
// has no inference block; its capsule component (the step-driven fixture
// test/fixtures/components/script-capsule, fetched as `source: {url, sha256}`) sends a task to
// capsule B by B's Service URL, which A's allowlist names as `capsule://`. B (an agent capsule on
// the scripted provider) completes it: its task span reaches the OTLP receiver and tasks/get says so.
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
  otlpPod,
  policyAdmits,
  serviceAnswers,
  providerPod,
  recordedRequests,
  spansUntil,
  waitFor,
  wgetPost,
} from './support.ts';

const ns = 'rn-script';
const url = (name: string) => `http://${name}.${ns}.svc.cluster.local:8080`;
const component = 'script-capsule.wasm';

/** Every text part of an A2A task result (status message and artifacts). */
const texts = (result: any): string[] =>
  [result?.status?.message, ...(result?.artifacts ?? [])].flatMap((m: any) =>
    (m?.parts ?? []).filter((p: any) => p.kind === 'text').map((p: any) => p.text as string),
  );

describe("peering through a script capsule's message/send on the real node", () => {
  let exec: Awaited<ReturnType<typeof clientPod>>;
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
    const [files, provider, otlp] = await Promise.all([
      fixturePod(ns, [component]),
      providerPod(ns, { turns: [{ text: "B got the script's task." }], onExhausted: 'repeat-last' }, 'provider-b'),
      otlpPod(ns),
    ]);
    const admitClientAndA = {
      from: [{ podSelector: { matchLabels: { role: 'client' } } }, { podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'script-a' } } }],
    };
    await apply(
      stringify({
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'cap-b', namespace: ns },
        spec: {
          version: '1.0.0',
          artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
          inference: {
            driver: { artifact: 'driver-anthropic' },
            model: 'claude-sonnet-4-5',
            endpoint: provider,
            max_turns: 2,
            max_tokens: 256,
            system_prompt: 'You are B.',
            apiKeySecretRef: { name: 'anthropic-key', key: 'api-key' },
          },
          observability: { otel_endpoint: otlp },
          ingress: admitClientAndA,
        },
      }),
    );
    // A: no inference; the capsule component is the artifact named like the capsule.
    await apply(
      stringify({
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'script-a', namespace: ns },
        spec: {
          version: '1.0.0',
          artifacts: [{ name: 'script-a', runtime: 'tool', source: files[component] }],
          capabilities: { network: { allow: [`capsule://${ns}/cap-b`] } },
          ingress: { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
        },
      }),
    );
    await Promise.all(['cap-b', 'script-a'].map((c) => waitFor(ns, `capsule/${c}`, 'condition=Ready', '180s')));
    exec = await clientPod(ns, 'client', { role: 'client' });
    await policyAdmits(ns, 'client');
    await Promise.all(['cap-b', 'script-a'].map((c) => serviceAnswers(exec, ns, c)));
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  it("script capsule A reaches capsule B by B's Service URL through message/send, and both tasks complete", async () => {
    const program = JSON.stringify({ steps: [{ op: 'send', url: `${url('cap-b')}/`, text: 'hello from the script capsule', messageId: 'm-script-1' }] });
    const r = await exec(wgetPost(`${url('script-a')}/`, messageSend(program), 60, await callerToken(ns, `${url('script-a')}/`)));
    expect(r.code, r.out).toBe(0);
    const body = JSON.parse(r.out);
    expect(body.result.status.state, r.out).toBe('completed');
    const answer = texts(body.result).find((t) => t.includes('"results"'));
    expect(answer, r.out).toBeDefined();
    const [sent] = JSON.parse(answer!).results;
    expect(sent, answer).toMatchObject({ op: 'send', ok: true });
    expect(typeof sent.value.taskId).toBe('string');

    // B ran the task: its span (ended when the task ended) reaches the receiver, and B says completed
    await spansUntil(ns, (s) => s.some((x) => x.name === 'invoke_agent cap-b'));
    const reqs = await recordedRequests(ns, 'provider-b');
    expect(JSON.stringify(reqs.map((q) => q.body))).toContain('hello from the script capsule');
    const get = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: sent.value.taskId } });
    // A's message/send carried A's projected token: the task on B is A's. Another caller (the
    // client) does not see it; A's own ServiceAccount does.
    const other = await exec(wgetPost(`${url('cap-b')}/`, get, 60, await callerToken(ns, `${url('cap-b')}/`)));
    expect(other.code, other.out).toBe(0);
    expect(JSON.parse(other.out).error, other.out).toBeDefined();
    const g = await exec(wgetPost(`${url('cap-b')}/`, get, 60, await callerToken(ns, `${url('cap-b')}/`, 'script-a')));
    expect(g.code, g.out).toBe(0);
    const task = JSON.parse(g.out).result;
    expect(task.status.state, g.out).toBe('completed');
    expect(texts(task).join(' ')).toContain("B got the script's task.");
  });
});
