// Issue 12 §3 on the real node: capsule A reaches capsule B by B's Service URL (delegate-task),
// B's ingress NetworkPolicy refuses a pod it does not admit, and both fences hold: the runtime
// refuses a destination outside A's allowlist, and the NetworkPolicy blocks it when the pod tries
// by other means. Issue 14 §3: A proves who it is to B with the ServiceAccount token the operator
// projects for B's URL (B verifies it with a TokenReview); a caller without one, or with a token
// for another audience, gets 401; A takes an API key from its Secret; only C, whose Capsule says
// so, serves anonymous callers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  apiKeySecret,
  apply,
  callerToken,
  clientPod,
  createNamespace,
  deleteNamespace,
  getJson,
  messageSend,
  otlpPod,
  policyAdmits,
  serviceAnswers,
  providerPod,
  recordedRequests,
  spansUntil,
  type PodSpan,
  waitFor,
  wgetPost,
  tcpProbe,
} from './support.ts';

const ns = 'rn-peering';
// C lives in a namespace of its own: A's egress opens its own namespace on 8080 for the provider
// Service (a plain Service host: the operator cannot know its pods), so a peer there would be reachable
const nsC = 'rn-peering-c';
const url = (name: string) => `http://${name}.${name === 'cap-c' ? nsC : ns}.svc.cluster.local:8080`;

let otlp = '';

// A's API key for the client pod (a2a.auth.apiKeys: one Secret key per holder)
const CLIENT_KEY = `rn-${Math.random().toString(16).slice(2)}${Math.random().toString(16).slice(2)}`;

function capsule(name: string, provider: string, extra: { allow?: string[]; ingress?: unknown[]; namespace?: string; auth?: unknown } = {}): string {
  return stringify({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: extra.namespace ?? ns },
    spec: {
      version: '1.0.0',
      artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
      capabilities: { network: { allow: extra.allow ?? [] } },
      inference: {
        driver: { artifact: 'driver-anthropic' },
        model: 'claude-sonnet-4-5',
        endpoint: provider,
        max_turns: 4,
        max_tokens: 1024,
        system_prompt: `You are ${name}.`,
        apiKeySecretRef: { name: 'anthropic-key', key: 'api-key' },
      },
      observability: { otel_endpoint: otlp },
      ...(extra.ingress ? { ingress: { from: extra.ingress } } : {}),
      ...(extra.auth ? { a2a: { auth: extra.auth } } : {}),
    },
  });
}

describe('peering between capsules on the real node', () => {
  let exec: Awaited<ReturnType<typeof clientPod>>;
  let outsider: Awaited<ReturnType<typeof clientPod>>;
  let withApiToken: Awaited<ReturnType<typeof clientPod>>;
  beforeAll(async () => {
    await Promise.all([createNamespace(ns), createNamespace(nsC)]);
    await Promise.all([apply(apiKeySecret(ns)), apply(apiKeySecret(nsC))]);
    await apply(`apiVersion: v1\nkind: Secret\nmetadata: { name: a-keys, namespace: ${ns} }\nstringData: { client: ${CLIENT_KEY} }\n`);
    otlp = await otlpPod(ns);
    // A: asks B through delegate-task, then answers with what B said; B: answers.
    const [provA, provB] = await Promise.all([
      providerPod(
        ns,
        {
          turns: [
            { toolCalls: [{ name: 'delegate-task', input: { peer: url('cap-b'), task: 'Say the word from B.' } }] },
            { text: 'A relays: done.' },
            // the fence test: a destination outside the allowlist
            { toolCalls: [{ name: 'delegate-task', input: { peer: url('cap-c'), task: 'Should never arrive.' } }] },
            { text: 'A could not reach C.' },
          ],
        },
        'provider-a',
      ),
      providerPod(ns, { turns: [{ text: 'B says: pineapple.' }], onExhausted: 'repeat-last' }, 'provider-b'),
    ]);
    // C exists and admits every pod of A's namespace: only A's own fences may stop A.
    await apply(capsule('cap-b', provB, { ingress: [{ podSelector: { matchLabels: { role: 'client' } } }] }));
    await apply(capsule('cap-c', provB, { namespace: nsC, ingress: [{ namespace: ns }], auth: { anonymous: true } }));
    await apply(
      capsule('cap-a', provA, {
        allow: ['capsule://rn-peering/cap-b'],
        ingress: [{ podSelector: { matchLabels: { role: 'client' } } }],
        auth: { apiKeys: { secretName: 'a-keys' } },
      }),
    );
    await Promise.all(['cap-a', 'cap-b', 'cap-c'].map((c) => waitFor(c === 'cap-c' ? nsC : ns, `capsule/${c}`, 'condition=Ready', '180s')));
    [exec, outsider, withApiToken] = await Promise.all([
      clientPod(ns, 'client', { role: 'client' }),
      clientPod(ns, 'outsider', { role: 'outsider' }),
      clientPod(ns, 'client-sa', { role: 'client' }, { apiToken: true }),
    ]);
    await Promise.all([policyAdmits(ns, 'client'), policyAdmits(ns, 'client-sa')]);
    await Promise.all(['cap-a', 'cap-b'].map((c) => serviceAnswers(exec, ns, c)));
  });
  afterAll(async () => {
    await Promise.all([deleteNamespace(ns), deleteNamespace(nsC)]);
  });

  it("capsule A completes a task by delegating to B through B's Service URL (delegate-task); B's task span nests under A's in the OTLP receiver", async () => {
    const r = await exec(wgetPost(`${url('cap-a')}/`, messageSend('Ask B for the word.'), 60, CLIENT_KEY));
    expect(r.code, r.out).toBe(0);
    const body = JSON.parse(r.out);
    expect(body.result.status.state).toBe('completed');
    expect(JSON.stringify(body.result)).toContain('A relays: done.');
    // B's answer came back to A as the tool result
    const reqs = await recordedRequests(ns, 'provider-a');
    expect(JSON.stringify(reqs[1]?.body)).toContain('B says: pineapple.');

    // both pods export to the receiver pod: invoke_agent cap-b is a child of A's execute_tool delegate-task, itself a child of invoke_agent cap-a
    const find = (spans: PodSpan[]) => {
      const callerTask = spans.find((s) => s.name === 'invoke_agent cap-a');
      const delegate = spans.find((s) => s.name === 'execute_tool delegate-task' && s.parentSpanId === callerTask?.spanId);
      const calleeTask = spans.find((s) => s.name === 'invoke_agent cap-b');
      return { callerTask, delegate, calleeTask };
    };
    const spans = await spansUntil(ns, (s) => {
      const f = find(s);
      return !!(f.callerTask && f.delegate && f.calleeTask);
    });
    const { callerTask, delegate, calleeTask } = find(spans);
    expect(calleeTask!.traceId).toBe(callerTask!.traceId);
    expect(delegate!.parentSpanId).toBe(callerTask!.spanId);
    expect(calleeTask!.parentSpanId).toBe(delegate!.spanId);
  });

  it("a pod outside B's ingress is refused by the network, while an admitted pod gets through", async () => {
    const card = `${url('cap-b')}/.well-known/agent-card.json`;
    const ok = await exec(`timeout 20 wget -q -O- '${card}'`);
    expect(ok.code, ok.out).toBe(0);
    expect(JSON.parse(ok.out).name).toBeTruthy();
    const refused = await outsider(`timeout 5 wget -q -O- '${card}'`);
    expect(refused.code).not.toBe(0);
    // the outsider itself has a working network: it reaches C, whose ingress admits every pod of this namespace
    const c = await outsider(`timeout 20 wget -q -O- '${url('cap-c')}/.well-known/agent-card.json'`);
    expect(c.code, c.out).toBe(0);
  });

  it("fence 1: the runtime refuses a delegate-task to a destination outside A's allowlist (fail-closed)", async () => {
    const r = await exec(wgetPost(`${url('cap-a')}/`, messageSend('Ask C.', 'm-2'), 60, CLIENT_KEY));
    expect(r.code, r.out).toBe(0);
    const reqs = await recordedRequests(ns, 'provider-a');
    // the tool result handed back to the model is an error naming the refused peer
    const toolResult = JSON.stringify(reqs[3]?.body?.messages?.at(-1));
    expect(toolResult).toContain('"is_error":true');
    expect(toolResult).toContain('cap-c');
  });

  it("fence 2: from inside A's pod, other means (a raw TCP connection) reach B but not C: the NetworkPolicy blocks it", async () => {
    const pods = await getJson(ns, 'pods -l app.kubernetes.io/instance=cap-a');
    const pod = pods.items[0].metadata.name;
    const probe = (host: string) => tcpProbe(ns, pod, pods.items[0].spec.containers[0].name, host, 8080);
    expect(await probe(`cap-b.${ns}.svc.cluster.local`)).toBe('connected');
    expect(await probe(`cap-c.${nsC}.svc.cluster.local`)).not.toBe('connected');
  });

  it("B takes only ServiceAccount tokens for its own URL: none, the pod's API server token, or a token for A's URL get 401; a token for B's URL is served", async () => {
    const b = `${url('cap-b')}/`;
    const none = await exec(wgetPost(b, messageSend('Hello B.', 'm-none'), 20));
    expect(none.code).not.toBe(0);
    expect(none.out).toContain('401');
    // the kubelet's default token of this pod: a real, valid token, but for the API server's audience
    const apiAudience = await withApiToken(wgetPost(b, messageSend('Hello B.', 'm-api'), 20, '$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)'));
    expect(apiAudience.code).not.toBe(0);
    expect(apiAudience.out).toContain('401');
    const otherAudience = await exec(wgetPost(b, messageSend('Hello B.', 'm-aud'), 20, await callerToken(ns, `${url('cap-a')}/`)));
    expect(otherAudience.out).toContain('401');
    // A's API key means nothing to B
    expect((await exec(wgetPost(b, messageSend('Hello B.', 'm-key'), 20, CLIENT_KEY))).out).toContain('401');
    const ok = await exec(wgetPost(b, messageSend('Hello B.', 'm-ok'), 60, await callerToken(ns, b)));
    expect(ok.code, ok.out).toBe(0);
    expect(JSON.parse(ok.out).result.status.state).toBe('completed');
    // B reaches the API server for its TokenReviews: the chart found the node's API server address
    // in the `kubernetes` EndpointSlice at install (helm lookup) and the operator added the Service address.
    const egress = (await getJson(ns, 'networkpolicy cap-b-egress')).spec.egress;
    expect(egress).toContainEqual({ to: [{ ipBlock: { cidr: '10.201.0.2/32' } }], ports: [{ protocol: 'TCP', port: 6443 }] });
    expect(egress).toContainEqual({ to: [{ ipBlock: { cidr: '10.96.0.1/32' } }], ports: [{ protocol: 'TCP', port: 443 }] });
  });

  it('A refuses a wrong API key and callers without one (no anonymous access on A); C, whose Capsule says anonymous, serves them', async () => {
    const a = `${url('cap-a')}/`;
    expect((await exec(wgetPost(a, messageSend('Hi.', 'm-a-none'), 20))).out).toContain('401');
    expect((await exec(wgetPost(a, messageSend('Hi.', 'm-a-bad'), 20, `${CLIENT_KEY}x`))).out).toContain('401');
    const c = await outsider(wgetPost(`${url('cap-c')}/`, messageSend('Hi C.', 'm-c-anon'), 60));
    expect(c.code, c.out).toBe(0);
    expect(JSON.parse(c.out).result.status.state).toBe('completed');
  });
});
