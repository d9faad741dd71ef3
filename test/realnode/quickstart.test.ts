// Issue 12 §3 on the real node: the chart's operator as a pod, and the quickstart Capsule serving a
// task through its Service. See test/realnode/global-setup.ts for what runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { operatorImage, operatorNamespace, releaseName, runtimeImage } from '../cluster/node/operator.ts';
import {
  apiKeySecret,
  apply,
  callerToken,
  clientPod,
  createNamespace,
  deleteNamespace,
  getJson,
  kubectl,
  messageSend,
  policyAdmits,
  serviceAnswers,
  providerPod,
  readExample,
  waitFor,
  wgetPost,
} from './support.ts';

describe('operator installed by helm on the real node', () => {
  it('runs as a pod under the chart ServiceAccount, not cluster-admin, and holds its Lease', async () => {
    const pods = await getJson(operatorNamespace, `pods -l app.kubernetes.io/name=capsule-operator,app.kubernetes.io/instance=${releaseName}`);
    expect(pods.items).toHaveLength(1);
    const pod = pods.items[0];
    expect(pod.status.phase).toBe('Running');
    expect(pod.status.containerStatuses[0].ready).toBe(true);
    expect(pod.spec.serviceAccountName).toBe(releaseName);
    // the image built from operator/Dockerfile, run as the image says (no pull: it is only in the node's containerd)
    expect(pod.spec.containers[0].image).toBe(operatorImage());
    expect(pod.spec.containers[0].imagePullPolicy).toBe('Never');

    // the Lease names this pod: leader election went through the API server with the pod's token
    await waitFor(operatorNamespace, `lease/${releaseName}`, `jsonpath={.spec.holderIdentity}=${pod.metadata.name}`);

    // the chart's RBAC, not more: the SA may manage Capsules but not, say, delete nodes
    const as = `--as=system:serviceaccount:${operatorNamespace}:${releaseName}`;
    expect((await kubectl(['auth', 'can-i', as, 'watch', 'capsules.murmur.io', '-A'])).trim()).toBe('yes');
    const nodes = await kubectl(['auth', 'can-i', as, 'delete', 'nodes']).catch((e: { stdout: string }) => e.stdout);
    expect(nodes.trim()).toBe('no');
  });
});

describe('quickstart Capsule on the real node', () => {
  const ns = 'rn-quickstart';
  let provider = '';
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
    provider = await providerPod(ns, {
      turns: [
        { text: 'It is Tuesday, from a real pod.', usage: { input: 120, output: 30 } },
        // the roll test: slow enough to be in flight while the pods roll
        { text: 'A slow answer.', usage: { input: 1, output: 1 }, delayMs: 15_000 },
      ],
      onExhausted: 'repeat-last',
    });
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  it('goes Ready because its runtime container is Ready, and a client pod gets `completed` through the Service DNS name', async () => {
    const capsule = parse(readExample('quickstart.yaml'));
    capsule.metadata.namespace = ns;
    capsule.spec.inference.endpoint = provider; // the in-cluster scripted provider, reached through the capsule's egress policy
    capsule.spec.ingress = { from: [{ podSelector: { matchLabels: { role: 'client' } } }] };
    await apply(stringify(capsule));

    await waitFor(ns, 'capsule/assistant', 'condition=Ready', '180s');
    const pods = await getJson(ns, 'pods -l app.kubernetes.io/instance=assistant');
    const runtime = pods.items.find((p: any) => p.spec.containers.some((c: any) => c.image === runtimeImage()));
    expect(runtime, 'a pod running the runtime image').toBeDefined();
    expect(runtime.status.containerStatuses.every((c: any) => c.ready && c.state.running)).toBe(true);

    const c = await getJson(ns, 'capsule/assistant');
    expect(c.status.a2aUrl).toBe(`http://assistant.${ns}.svc.cluster.local:8080`);
    const exec = await clientPod(ns, 'client', { role: 'client' });
    await policyAdmits(ns, 'client'); // the capsule's ingress rule names role=client
    await serviceAnswers(exec, ns, 'assistant');
    // The quickstart Capsule says nothing about a2a.auth: callers prove who they are with a
    // ServiceAccount token for its URL (as `kubectl create token` makes one by hand); none: 401.
    const refused = await exec(wgetPost(`${c.status.a2aUrl}/`, messageSend('What day is it?', 'm-anon')));
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain('401');
    const r = await exec(wgetPost(`${c.status.a2aUrl}/`, messageSend('What day is it?'), 60, await callerToken(ns, `${c.status.a2aUrl}/`)));
    expect(r.code, r.out).toBe(0);
    const body = JSON.parse(r.out);
    expect(body.result.status.state).toBe('completed');
    expect(JSON.stringify(body.result)).toContain('It is Tuesday, from a real pod.');
  });

  it("the operator, in the cluster, scrapes the pod's /metrics: `kubectl get capsules` shows its tokens", async () => {
    // one task so far: 120 input + 30 output tokens, as the scripted provider reported them
    await waitFor(ns, 'capsule/assistant', 'jsonpath={.status.usage.totalTokens}=150', '120s');
    const table = await kubectl(['-n', ns, 'get', 'capsules']);
    const [header, row] = table.trim().split('\n');
    const col = header!.split(/\s{2,}/).indexOf('TOKENS');
    expect(col, header).toBeGreaterThan(0);
    expect(row!.split(/\s{2,}/)[col]).toBe('150');
  });

  it('changing the system prompt rolls the pods; a task in flight ends with an answer or a clear failure reason, never a silent drop', async () => {
    const before = (await getJson(ns, 'pods -l app.kubernetes.io/instance=assistant')).items.map((p: any) => p.metadata.name);
    const exec = await clientPod(ns, 'client', { role: 'client' });
    // the task reaches the provider, which holds its answer for 15 s: wait until the runtime reports it active
    const url = `http://assistant.${ns}.svc.cluster.local:8080/`;
    const inFlight = exec(`${wgetPost(url, messageSend('Answer slowly.', 'm-roll'), 90, await callerToken(ns, url))}; echo " exit=$?"`);
    const podIp = (await getJson(ns, 'pods -l app.kubernetes.io/instance=assistant')).items[0].status.podIP;
    const active = await exec(`timeout 60 sh -c 'until wget -q -O- http://${podIp}:9090/metrics | grep -q "^capsule_active_tasks.* 1$"; do sleep 0.2; done'`);
    expect(active.code, `the task never showed as active: ${active.out}`).toBe(0);
    await kubectl([
      '-n',
      ns,
      'patch',
      'capsule',
      'assistant',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { inference: { system_prompt: 'You are a concise assistant, second edition.' } } }),
    ]);
    await kubectl(['-n', ns, 'rollout', 'status', 'deployment/assistant', '--timeout=180s']);
    await waitFor(ns, 'capsule/assistant', 'condition=Ready', '120s');
    const after = (await getJson(ns, 'pods -l app.kubernetes.io/instance=assistant')).items.map((p: any) => p.metadata.name);
    expect(
      after.some((n: string) => !before.includes(n)),
      'new pods after the roll',
    ).toBe(true);

    const r = await inFlight;
    const out = r.out.replace(/ exit=\d+\s*$/, '').trim();
    // a silent drop is an empty response (the connection closed without an answer)
    expect(out, `the in-flight task got no answer at all (${r.out.trim()})`).not.toBe('');
    const body = JSON.parse(out);
    const state = body.result?.status?.state;
    if (state === 'completed') expect(JSON.stringify(body.result)).toContain('A slow answer.');
    else {
      // failed / canceled: with a reason a caller can read
      expect(['failed', 'canceled', 'rejected']).toContain(state ?? (body.error ? 'failed' : undefined));
      const reason = JSON.stringify(body.result?.status?.message ?? body.error ?? '');
      expect(reason.length).toBeGreaterThan(10);
    }
  });
});
