// Issue 12 §3 on the real node: capsule A reaches capsule B by B's Service URL (delegate-task),
// B's ingress NetworkPolicy refuses a pod it does not admit, and both fences hold: the runtime
// refuses a destination outside A's allowlist, and the NetworkPolicy blocks it when the pod tries
// by other means.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { apiKeySecret, apply, clientPod, createNamespace, deleteNamespace, getJson, kubectl, messageSend, otlpPod, providerPod, recordedRequests, spansUntil, waitFor, wgetPost, type PodSpan } from './support.ts';

const ns = 'rn-peering';
// C lives in a namespace of its own: A's egress opens its own namespace on 8080 for the provider
// Service (a plain Service host: the operator cannot know its pods), so a peer there would be reachable
const nsC = 'rn-peering-c';
const url = (name: string) => `http://${name}.${name === 'cap-c' ? nsC : ns}.svc.cluster.local:8080`;

let otlp = '';

function capsule(name: string, provider: string, extra: { allow?: string[]; ingress?: unknown[]; namespace?: string } = {}): string {
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
    },
  });
}

describe('peering between capsules on the real node', () => {
  let exec: Awaited<ReturnType<typeof clientPod>>;
  let outsider: Awaited<ReturnType<typeof clientPod>>;
  beforeAll(async () => {
    await Promise.all([createNamespace(ns), createNamespace(nsC)]);
    await Promise.all([apply(apiKeySecret(ns)), apply(apiKeySecret(nsC))]);
    otlp = await otlpPod(ns);
    // A: asks B through delegate-task, then answers with what B said; B: answers.
    const [provA, provB] = await Promise.all([
      providerPod(ns, {
        turns: [
          { toolCalls: [{ name: 'delegate-task', input: { peer: url('cap-b'), task: 'Say the word from B.' } }] },
          { text: 'A relays: done.' },
          // the fence test: a destination outside the allowlist
          { toolCalls: [{ name: 'delegate-task', input: { peer: url('cap-c'), task: 'Should never arrive.' } }] },
          { text: 'A could not reach C.' },
        ],
      }, 'provider-a'),
      providerPod(ns, { turns: [{ text: 'B says: pineapple.' }], onExhausted: 'repeat-last' }, 'provider-b'),
    ]);
    // C exists and admits every pod of A's namespace: only A's own fences may stop A.
    await apply(capsule('cap-b', provB, { ingress: [{ podSelector: { matchLabels: { role: 'client' } } }] }));
    await apply(capsule('cap-c', provB, { namespace: nsC, ingress: [{ namespace: ns }] }));
    await apply(capsule('cap-a', provA, { allow: ['capsule://rn-peering/cap-b'], ingress: [{ podSelector: { matchLabels: { role: 'client' } } }] }));
    await Promise.all(['cap-a', 'cap-b', 'cap-c'].map((c) => waitFor(c === 'cap-c' ? nsC : ns, `capsule/${c}`, 'condition=Ready', '180s')));
    [exec, outsider] = await Promise.all([clientPod(ns, 'client', { role: 'client' }), clientPod(ns, 'outsider', { role: 'outsider' })]);
  });
  afterAll(async () => {
    await Promise.all([deleteNamespace(ns), deleteNamespace(nsC)]);
  });

  it('capsule A completes a task by delegating to B through B\'s Service URL (delegate-task); B\'s task span nests under A\'s in the OTLP receiver', async () => {
    const r = await exec(wgetPost(`${url('cap-a')}/`, messageSend('Ask B for the word.')));
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
    const spans = await spansUntil(ns, (s) => { const f = find(s); return !!(f.callerTask && f.delegate && f.calleeTask); });
    const { callerTask, delegate, calleeTask } = find(spans);
    expect(calleeTask!.traceId).toBe(callerTask!.traceId);
    expect(delegate!.parentSpanId).toBe(callerTask!.spanId);
    expect(calleeTask!.parentSpanId).toBe(delegate!.spanId);
  });

  it('a pod outside B\'s ingress is refused by the network, while an admitted pod gets through', async () => {
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

  it('fence 1: the runtime refuses a delegate-task to a destination outside A\'s allowlist (fail-closed)', async () => {
    const r = await exec(wgetPost(`${url('cap-a')}/`, messageSend('Ask C.', 'm-2')));
    expect(r.code, r.out).toBe(0);
    const reqs = await recordedRequests(ns, 'provider-a');
    // the tool result handed back to the model is an error naming the refused peer
    const toolResult = JSON.stringify(reqs[3]?.body?.messages?.at(-1));
    expect(toolResult).toContain('"is_error":true');
    expect(toolResult).toContain('cap-c');
  });

  it('fence 2: from inside A\'s pod, other means (a raw TCP connection) reach B but not C: the NetworkPolicy blocks it', async () => {
    const pods = await getJson(ns, 'pods -l app.kubernetes.io/instance=cap-a');
    const pod = pods.items[0].metadata.name;
    const probe = (host: string) => kubectl(['-n', ns, 'exec', pod, '-c', pods.items[0].spec.containers[0].name, '--', 'node', '-e',
      `const s=require('net').connect(8080,'${host}');s.setTimeout(5000);s.on('connect',()=>{console.log('connected');process.exit(0)});` +
      `s.on('timeout',()=>{console.log('timeout');process.exit(3)});s.on('error',(e)=>{console.log(e.code);process.exit(4)})`])
      .then((out) => out.trim(), (e: { stdout: string }) => e.stdout.trim());
    expect(await probe(`cap-b.${ns}.svc.cluster.local`)).toBe('connected');
    expect(await probe(`cap-c.${nsC}.svc.cluster.local`)).not.toBe('connected');
  });
});
