// Issue 37 §1 on the real node: Capsules that sleep. `sleeper` (sleep.afterIdle 10s) keeps its
// tasks in the node-hosted PostgreSQL (host-services.ts); `waker` (afterIdle 20s), its peer, keeps
// them in SQLite on a PersistentVolumeClaim bound to a static hostPath PersistentVolume this file
// creates (the node has no provisioner); `keyed` (afterIdle 10s, PostgreSQL) takes API keys.
// While a Capsule sleeps its Service still answers: the operator's `<capsule>-activator`
// EndpointSlice sends callers to the activator, which serves the card, fences callers as the
// capsule would, and holds the first request while the capsule wakes.
// The scripted provider runs in this process (forwardIntoNode): each test pushes the turns it uses.
// Every wait is a watch (kubectl wait, a watch of Events) on the state waited for, never a sleep.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { kubectlPath } from '../cluster/harness.ts';
import { nodePaths } from '../cluster/node/config.ts';
import { runtimeImage } from '../cluster/node/operator.ts';
import { startScriptedProvider, type ScriptTurn, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { forwardIntoNode, hostServiceYaml, nodeAddress, startNodePostgres, type Forward, type NodePostgres } from './host-services.ts';
import {
  apiKeySecret,
  apply,
  callerToken,
  clientPod,
  createNamespace,
  deleteNamespace,
  fixturePod,
  getJson,
  kubeconfig,
  kubectl,
  messageSend,
  policyAdmits,
  waitFor,
  wgetPost,
  probeCapsule,
} from './support.ts';

const ns = 'rn-sleep';
const PG_PORT = 5432;
const PROVIDER_PORT = 18081;
const PV = `${ns}-waker-store`;
const url = (name: string) => `http://${name}.${ns}.svc.cluster.local:8080`;
const probe = 'sandbox-probe.wasm';

const turns: ScriptTurn[] = [];
let provider: ScriptedProvider;
let forward: Forward;
let store: NodePostgres;
let client: Awaited<ReturnType<typeof clientPod>>;
let outsider: Awaited<ReturnType<typeof clientPod>>;
let token = '';
/** The one API key `keyed` takes (its Secret `keyed-keys`, holder ci-bot). */
const KEY = randomBytes(24).toString('hex');
/** A task `sleeper` completed before it first slept. */
let before: { id: string; text: string };

function capsule(name: string, extra: Record<string, unknown>, sources: Record<string, { url: string; sha256: string }>): string {
  return probeCapsule({ ns, name, endpoint: forward.url, probe: sources[probe], extra });
}

/** A static PersistentVolume on a folder of the node, reserved (claimRef) for waker's claim. */
function storeVolume(): string {
  const dir = join(nodePaths(inject('realnode').name).state, 'volumes', PV);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777); // the runtime runs as 65532; a hostPath volume gets no fsGroup
  return stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: PV },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: '',
      claimRef: { namespace: ns, name: 'waker-store' },
      hostPath: { path: dir, type: 'Directory' },
    },
  });
}

/**
 * A call from the client pod whose connect failed: the NetworkPolicy engine (kube-router) admits a
 * new pod's address a moment after the pod starts (its REJECT answers "Connection refused"), and
 * before capsule pods paused in preStop (PRESTOP_SECS) a connect could still be sent to a capsule's
 * deleted pod by a lagging kube-proxy ("No route to host": a capture showed the node's ARP for the
 * deleted address unanswered; the test below now holds that case without a retry). Nothing was
 * sent on a failed connect, so the call is made again, as a caller would; any other failure (an
 * HTTP error, a timeout) is returned as it is. Each try is a real request; bounded.
 */
async function call(cmd: string): Promise<{ code: number; out: string }> {
  let r = await client(cmd);
  for (let i = 0; i < 20 && r.code !== 0 && /can't connect to remote host/.test(r.out); i++) r = await client(cmd);
  return r;
}

/** One JSON-RPC call (A2A 0.3) from the client pod to a capsule's Service, with the caller's token. */
async function rpc(to: string, method: string, params: unknown, seconds = 120): Promise<any> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const r = await call(wgetPost(`${to}/`, body, seconds, token));
  expect(r.code, `${method} to ${to}: ${r.out}${r.code === 0 ? '' : await routeState()}`).toBe(0);
  return JSON.parse(r.out);
}

/** What the Service's route looked like when a call failed: the slices, the capsules' phases, the operator's last lines. */
async function routeState(): Promise<string> {
  const slices = await kubectl([
    '-n',
    ns,
    'get',
    'endpointslices',
    '-o',
    'jsonpath={range .items[*]}{.metadata.name} {.endpoints[*].addresses} {.endpoints[*].conditions.ready}{"\\n"}{end}',
  ]).catch((e: Error) => e.message);
  const phases = await kubectl(['-n', ns, 'get', 'capsules', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}']).catch(
    (e: Error) => e.message,
  );
  const op = await kubectl(['-n', 'capsule-system', 'logs', 'deploy/capsule-operator', '--tail=40']).catch((e: Error) => e.message);
  const act = await kubectl(['-n', 'capsule-system', 'logs', 'deploy/capsule-operator-activator', '--tail=20']).catch((e: Error) => e.message);
  const pods = await kubectl(['-n', ns, 'get', 'pods', '-o', 'wide']).catch((e: Error) => e.message);
  const svc = await kubectl(['-n', ns, 'get', 'service', 'sleeper', '-o', 'jsonpath={.spec.clusterIP}']).catch(() => '');
  const rules = await new Promise<string>((res) =>
    execFile('ip', ['netns', 'exec', nodePaths(inject('realnode').name).netns, 'iptables-save', '-t', 'nat'], { maxBuffer: 64 << 20 }, (err, out) =>
      res(
        err
          ? err.message
          : String(out)
              .split('\n')
              .filter((l) => (svc && l.includes(svc)) || l.includes('rn-sleep/sleeper'))
              .join('\n'),
      ),
    ),
  );
  return `\n--- pods:\n${pods}\n--- kube-proxy nat rules for sleeper (${svc}):\n${rules}\n--- endpoint slices:\n${slices}\n--- capsules: ${phases}\n--- operator:\n${op}\n--- activator:\n${act}`;
}

/** The Events of `reason` on Capsule `name` so far. */
const events = async (name: string, reason: string): Promise<any[]> =>
  (await getJson(ns, `events --field-selector involvedObject.kind=Capsule,involvedObject.name=${name},reason=${reason}`)).items;

/** Resolves once an Event of `reason` on Capsule `name` exists (a watch: listed first, then watched). */
function eventSeen(name: string, reason: string, timeoutMs = 180_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const args = [`--kubeconfig=${kubeconfig()}`, '-n', ns, 'get', 'events', '--watch', '-o', 'name'];
    const child = spawn(kubectlPath(), [...args, `--field-selector=involvedObject.kind=Capsule,involvedObject.name=${name},reason=${reason}`]);
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`no ${reason} event on capsule/${name} in ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout.on('data', () => {
      clearTimeout(timer);
      child.kill();
      resolve();
    });
  });
}

const runtimePods = async (name: string): Promise<any[]> => (await getJson(ns, `pods -l app.kubernetes.io/instance=${name}`)).items;

/** Waits until `name` sleeps: phase Sleeping, its Deployment at 0 replicas, every pod gone. */
async function asleep(name: string): Promise<void> {
  await waitFor(ns, `capsule/${name}`, 'jsonpath={.status.phase}=Sleeping', '240s');
  await waitFor(ns, `deployment/${name}`, 'jsonpath={.spec.replicas}=0');
  for (const p of await runtimePods(name)) {
    await waitFor(ns, `pod/${p.metadata.name}`, 'delete').catch((e: Error) => {
      if (!/not ?found/i.test(e.message)) throw e;
    });
  }
  await routeAnswers(name);
}

/**
 * The Service answers the client pod: its card fetched through it (from the activator while the
 * capsule sleeps: no wake). The NetworkPolicy engine (kube-router) admits a new pod's address a
 * moment after the pod starts; a connection in that moment is refused. That is the policy engine's
 * lag for a new caller, which a caller retries, not what this file tests. Each try is a real
 * request; bounded.
 */
async function routeAnswers(name: string): Promise<void> {
  let last = '';
  for (let i = 0; i < 60; i++) {
    const r = await client(`timeout 5 wget -q -O- '${url(name)}/.well-known/agent-card.json'`);
    if (r.code === 0) return;
    last = r.out;
  }
  throw new Error(`${name}'s Service did not answer its card through the activator after 60 tries: ${last}${await routeState()}`);
}

/** The node's kube-proxy: a process its supervisor started (supervisor.pids), by its command line. */
function kubeProxyPid(): number {
  const state = nodePaths(inject('realnode').name).state;
  for (const line of readFileSync(join(state, 'supervisor.pids'), 'utf8').split('\n')) {
    const pid = Number(line);
    if (!pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!.endsWith('/kube-proxy')) return pid;
    } catch {
      // ended since: not it
    }
  }
  throw new Error(`the node's kube-proxy is not among the processes in ${join(state, 'supervisor.pids')}`);
}

/** Resolves once pod `name` is being deleted (its deletionTimestamp set), while it may still run. */
async function terminating(name: string): Promise<void> {
  await kubectl(['-n', ns, 'wait', `pod/${name}`, '--for=jsonpath={.metadata.deletionTimestamp}', '--timeout=120s']);
}

/** A request that a sleeping `name` must refuse without waking: no WakeRequested event, still no pod. */
async function stillAsleep(name: string, wakesBefore: number): Promise<void> {
  expect(await events(name, 'WakeRequested')).toHaveLength(wakesBefore);
  expect((await getJson(ns, `capsule/${name}`)).status.phase).toBe('Sleeping');
  expect(await runtimePods(name)).toHaveLength(0);
}

/** After a request woke `name`: the activator asked once more, and the capsule is Ready again. */
async function wokeUp(name: string, wakesBefore: number): Promise<void> {
  expect((await events(name, 'WakeRequested')).length).toBeGreaterThan(wakesBefore);
  await waitFor(ns, `capsule/${name}`, 'jsonpath={.status.phase}=Ready');
}

const taskOf = (result: any): any => result?.task ?? result;
const answer = (task: any): string => JSON.stringify(task.artifacts ?? []);

beforeAll(async () => {
  await createNamespace(ns);
  provider = await startScriptedProvider({ turns });
  forward = await forwardIntoNode(PROVIDER_PORT, provider.port, 'sleep-provider');
  store = await startNodePostgres(PG_PORT);
  const pgUrl = await store.podUrl('sleeper', `postgres.${ns}.svc.cluster.local`);
  await apply(hostServiceYaml(ns, 'postgres', PG_PORT));
  await apply(apiKeySecret(ns));
  await apply(stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'store', namespace: ns }, stringData: { url: pgUrl } }));
  await apply(storeVolume());
  const sources = await fixturePod(ns, [probe]);
  const postgres = { postgres: { urlSecretRef: { name: 'store', key: 'url' }, address: `${nodeAddress}:${PG_PORT}` } };
  await apply(capsule('sleeper', { store: postgres, sleep: { afterIdle: '10s' } }, sources));
  // keyed: callers authenticate with an API key, which the activator checks by its digest while it sleeps.
  const keyedUrl = await store.podUrl('keyed', `postgres.${ns}.svc.cluster.local`);
  await apply(stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'keyed-store', namespace: ns }, stringData: { url: keyedUrl } }));
  await apply(stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'keyed-keys', namespace: ns }, stringData: { 'ci-bot': KEY } }));
  await apply(
    capsule(
      'keyed',
      {
        store: { postgres: { urlSecretRef: { name: 'keyed-store', key: 'url' }, address: `${nodeAddress}:${PG_PORT}` } },
        sleep: { afterIdle: '10s' },
        a2a: { auth: { apiKeys: { secretName: 'keyed-keys' } } },
      },
      sources,
    ),
  );
  await apply(
    capsule(
      'waker',
      {
        store: { embedded: { volumeClaim: { size: '1Gi' } } },
        sleep: { afterIdle: '20s' },
        capabilities: { network: { allow: [`capsule://${ns}/sleeper`] } },
      },
      sources,
    ),
  );
  [client, outsider] = await Promise.all([clientPod(ns, 'client', { role: 'client' }), clientPod(ns, 'outsider', { role: 'outsider' })]);
  token = await callerToken(ns, `${url('sleeper')}/`);
  await Promise.all(['sleeper', 'waker'].map((c) => waitFor(ns, `capsule/${c}`, 'condition=Ready', '300s')));
  await policyAdmits(ns, 'client');
  // policyAdmits sees the client in some capsule's source set; each capsule's own may lag it.
  await Promise.all(['sleeper', 'waker'].map(routeAnswers));
}, 420_000);

afterAll(async () => {
  await deleteNamespace(ns);
  await kubectl(['delete', 'persistentvolume', PV, '--wait=false', '--ignore-not-found']).catch(() => {});
  await forward?.stop();
  await provider?.stop();
  await store?.stop();
});

describe('a Capsule that sleeps, on the real node', () => {
  it('with sleep.afterIdle: 10s and a durable store it sleeps once idle: phase Sleeping, no pods, a Sleeping event', async () => {
    turns.push({ text: 'answered before sleeping' });
    const r = await rpc(url('sleeper'), 'message/send', JSON.parse(messageSend('Answer before you sleep.', 'm-before')).params);
    expect(r.result.status.state).toBe('completed');
    before = { id: r.result.id, text: 'answered before sleeping' };

    await asleep('sleeper');
    await eventSeen('sleeper', 'Sleeping');
    const c = await getJson(ns, 'capsule/sleeper');
    expect(c.status.sleep.since).toBeTruthy();
    expect(JSON.parse(c.status.sleep.agentCard).name).toBe('sleeper');
    // The Service keeps its selector; the activator's slice is what answers now.
    expect((await getJson(ns, 'service/sleeper')).spec.selector).toMatchObject({ 'murmur.io/capsule': 'sleeper' });
    const slice = await getJson(ns, 'endpointslice/sleeper-activator');
    expect(slice.metadata.labels['kubernetes.io/service-name']).toBe('sleeper');
    expect(slice.endpoints.length).toBeGreaterThan(0);
    expect(slice.endpoints.every((e: any) => e.conditions.ready === true)).toBe(true);
    // kubectl get capsules shows the state
    expect(await kubectl(['-n', ns, 'get', 'capsule', 'sleeper'])).toMatch(/Sleeping/);
  });

  it("the activator's NetworkPolicy reaches capsule pods by address in the node's pod range (the chart's Node lookup at install), so a woken pod needs no policy sync first", async () => {
    const node = JSON.parse(await kubectl(['get', 'nodes', '-o', 'json'])).items[0];
    const ranges: string[] = node.spec.podCIDRs ?? [node.spec.podCIDR];
    const policy = await getJson('capsule-system', 'networkpolicy/capsule-operator-activator');
    const toPods = policy.spec.egress.find((r: any) => r.ports?.some((p: any) => p.port === 8080));
    expect(toPods.to.filter((t: any) => t.ipBlock).map((t: any) => t.ipBlock.cidr)).toEqual(expect.arrayContaining(ranges));
  });

  it('its agent card still answers through its Service while it sleeps, without waking it', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    const r = await client(`timeout 20 wget -q -O- '${url('sleeper')}/.well-known/agent-card.json'`);
    expect(r.code, r.out).toBe(0);
    expect(JSON.parse(r.out).name).toBe('sleeper');
    await stillAsleep('sleeper', wakes);
  });

  it('a caller its NetworkPolicy refuses is refused while it sleeps (403) and does not wake it', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    const r = await outsider(`${wgetPost(`${url('sleeper')}/`, messageSend('Let me in.', 'm-outsider'), 20, token)} 2>&1`);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('403');
    await stillAsleep('sleeper', wakes);
  });

  it('a caller without a valid token gets 401 and does not wake it', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    const none = await client(`${wgetPost(`${url('sleeper')}/`, messageSend('Who am I?', 'm-none'), 20)} 2>&1`);
    expect(none.code).not.toBe(0);
    expect(none.out).toContain('401');
    const otherAudience = await client(
      `${wgetPost(`${url('sleeper')}/`, messageSend('Who am I?', 'm-aud'), 20, await callerToken(ns, `${url('waker')}/`))} 2>&1`,
    );
    expect(otherAudience.out).toContain('401');
    await stillAsleep('sleeper', wakes);
  });

  it('the first JSON-RPC message/send wakes it and completes: the caller sees no error', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    turns.push({ text: 'woken by JSON-RPC' });
    const r = await rpc(url('sleeper'), 'message/send', JSON.parse(messageSend('Wake up.', 'm-wake-rpc')).params);
    expect(r.error).toBeUndefined();
    expect(r.result.status.state).toBe('completed');
    expect(answer(r.result)).toContain('woken by JSON-RPC');
    await wokeUp('sleeper', wakes);
  });

  it("a caller the node's Service proxy still sends to its last pod as it goes to sleep is served by that pod (the preStop pause)", async () => {
    await waitFor(ns, 'capsule/sleeper', 'jsonpath={.status.phase}=Ready');
    const [pod] = await runtimePods('sleeper');
    expect(pod, 'sleeper has a pod').toBeTruthy();
    // kube-proxy lagging behind the EndpointSlices, as it does under load, made deterministic: it
    // is paused before the capsule sleeps, so its rules keep sending the Service to this pod.
    const proxy = kubeProxyPid();
    process.kill(proxy, 'SIGSTOP');
    try {
      await waitFor(ns, 'capsule/sleeper', 'jsonpath={.status.phase}=Sleeping', '240s');
      await terminating(pod.metadata.name);
      turns.push({ text: 'served while stopping' });
      // One call, not retried: its connect must find the pod still serving.
      const r = await client(wgetPost(`${url('sleeper')}/`, messageSend('Still there?', 'm-stopping'), 60, token));
      expect(r.code, r.out).toBe(0);
      const task = JSON.parse(r.out).result;
      expect(task.status.state).toBe('completed');
      expect(answer(task)).toContain('served while stopping');
    } finally {
      process.kill(proxy, 'SIGCONT');
    }
  });

  it('tasks/get of a task finished before it slept answers after the wake (the request that wakes it)', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    const r = await rpc(url('sleeper'), 'tasks/get', { id: before.id });
    expect(r.result.status.state).toBe('completed');
    expect(answer(r.result)).toContain(before.text);
    await wokeUp('sleeper', wakes);
  });

  it('the first HTTP+JSON message:send wakes it and completes', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    turns.push({ text: 'woken over REST' });
    const body = JSON.stringify({ message: { messageId: 'm-wake-rest', role: 'ROLE_USER', parts: [{ text: 'Wake up.' }] } }).replace(/'/g, `'\\''`);
    const r = await call(
      `timeout 120 wget -q -O- --header 'content-type: application/json' --header 'A2A-Version: 1.0' --header 'Authorization: Bearer ${token}' --post-data '${body}' '${url('sleeper')}/rest/message:send'`,
    );
    expect(r.code, r.out).toBe(0);
    const task = taskOf(JSON.parse(r.out));
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answer(task)).toContain('woken over REST');
    await wokeUp('sleeper', wakes);
  });

  it('the first message/stream wakes it: the caller gets the whole stream, to the final status', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    turns.push({ text: 'woken by a stream' });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/stream',
      params: { message: { kind: 'message', messageId: 'm-wake-stream', role: 'user', parts: [{ kind: 'text', text: 'Stream it.' }] } },
    }).replace(/'/g, `'\\''`);
    const r = await call(
      `timeout 120 wget -q -O- --header 'content-type: application/json' --header 'accept: text/event-stream' --header 'Authorization: Bearer ${token}' --post-data '${body}' '${url('sleeper')}/'`,
    );
    expect(r.code, r.out).toBe(0);
    const frames = r.out
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)).result);
    expect(frames[0]?.kind).toBe('task');
    expect(frames.at(-1)).toMatchObject({ kind: 'status-update', final: true, status: { state: 'completed' } });
    expect(r.out).toContain('woken by a stream');
    await wokeUp('sleeper', wakes);
  });

  it('the first gRPC SendMessage wakes it and completes (mur send --transport grpc from a pod)', async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    // mur from the runtime image: its A2A client speaks gRPC; the token reaches it as a file
    await apply(stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'grpc-token', namespace: ns }, stringData: { token } }));
    await apply(
      stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'grpc-client', namespace: ns, labels: { role: 'client' } },
        spec: {
          terminationGracePeriodSeconds: 0,
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 65532 },
          containers: [
            {
              name: 'mur',
              image: runtimeImage(),
              imagePullPolicy: 'Never',
              command: ['node', '-e', 'setInterval(() => {}, 1 << 30)'],
              volumeMounts: [{ name: 'token', mountPath: '/token', readOnly: true }],
            },
          ],
          volumes: [{ name: 'token', secret: { secretName: 'grpc-token' } }],
        },
      }),
    );
    await waitFor(ns, 'pod/grpc-client', 'condition=Ready');
    const card = JSON.parse((await getJson(ns, 'capsule/sleeper')).status.sleep.agentCard);
    const bindings = (card.supportedInterfaces ?? []).map((i: any) => i.protocolBinding);
    expect(bindings, 'the card of a Capsule offers a gRPC interface').toContain('GRPC');
    turns.push({ text: 'woken over gRPC' });
    const out = await kubectl([
      '-n',
      ns,
      'exec',
      'grpc-client',
      '--',
      'node',
      '/app/bin/mur',
      'send',
      `${url('sleeper')}/`,
      'Wake up over gRPC.',
      '--transport',
      'grpc',
      '--api-key-file',
      '/token/token',
      '--json',
    ]);
    const r = JSON.parse(out);
    expect(r.transport).toBe('GRPC');
    expect(r.state).toBe('completed');
    expect(JSON.stringify(r)).toContain('woken over gRPC');
    await wokeUp('sleeper', wakes);
  });

  it("a peer's delegate-task wakes a sleeping peer, and the peer's answer comes back", async () => {
    await asleep('sleeper');
    const wakes = (await events('sleeper', 'WakeRequested')).length;
    turns.push(
      { toolCalls: [{ name: 'delegate-task', input: { peer: url('sleeper'), task: 'Say the word.' } }] },
      { text: 'sleeper says: pineapple' },
      { text: 'waker relays: pineapple' },
    );
    const peerToken = await callerToken(ns, `${url('waker')}/`);
    const body = messageSend('Ask the sleeper for the word.', 'm-peer');
    const r = await call(wgetPost(`${url('waker')}/`, body, 180, peerToken));
    expect(r.code, r.out).toBe(0);
    const res = JSON.parse(r.out).result;
    expect(res.status.state).toBe('completed');
    expect(answer(res)).toContain('waker relays: pineapple');
    // the sleeper's answer reached the waker's model as the tool result
    expect(JSON.stringify(provider.requests.at(-1)?.body)).toContain('sleeper says: pineapple');
    await wokeUp('sleeper', wakes);
  }, 360_000); // two capsules woken

  it('a Capsule that takes API keys sleeps too: a wrong key gets 401 and does not wake it, its key wakes it and the task completes', async () => {
    await asleep('keyed');
    // The activator checks a key against these, never the Secret: one digest per key.
    expect((await getJson(ns, 'capsule/keyed')).status.sleep.apiKeyDigests).toHaveLength(1);
    const wakes = (await events('keyed', 'WakeRequested')).length;
    const wrong = await client(`${wgetPost(`${url('keyed')}/`, messageSend('Let me in.', 'm-wrong-key'), 20, randomBytes(24).toString('hex'))} 2>&1`);
    expect(wrong.code).not.toBe(0);
    expect(wrong.out).toContain('401');
    await stillAsleep('keyed', wakes);
    turns.push({ text: 'woken by an API key' });
    const r = await call(wgetPost(`${url('keyed')}/`, messageSend('Wake up.', 'm-wake-key'), 120, KEY));
    expect(r.code, r.out).toBe(0);
    const task = JSON.parse(r.out).result;
    expect(task.status.state).toBe('completed');
    expect(answer(task)).toContain('woken by an API key');
    await wokeUp('keyed', wakes);
  });

  it('a task waiting for input does not keep it awake: it sleeps with the task waiting, and the reply wakes it and resumes the task, which completes', async () => {
    await asleep('sleeper');
    turns.push({ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'painted blue' });
    const asked = await rpc(url('sleeper'), 'message/send', JSON.parse(messageSend('Paint it.', 'm-ask')).params);
    expect(asked.result.status.state).toBe('input-required');
    const podIp = (await runtimePods('sleeper')).find((p) => !p.metadata.deletionTimestamp).status.podIP;
    const metrics = await client(`timeout 20 wget -q -O- http://${podIp}:9090/metrics`);
    expect(metrics.out).toMatch(/^capsule_tasks_waiting_for_input\{capsule="sleeper"\} 1$/m);
    // Its resume point is in the store (docs/a2a.md "Restart"): the waiting task does not keep the
    // capsule busy, so it goes to sleep with the task still input-required.
    expect(metrics.out).not.toMatch(/^capsule_idle_seconds\{capsule="sleeper"\} 0$/m);
    await asleep('sleeper');

    const wakes = (await events('sleeper', 'WakeRequested')).length;
    const reply = await rpc(url('sleeper'), 'message/send', {
      message: {
        kind: 'message',
        messageId: 'm-reply',
        role: 'user',
        parts: [{ kind: 'text', text: 'blue' }],
        taskId: asked.result.id,
        contextId: asked.result.contextId,
      },
    });
    expect(reply.result.status.state).toBe('completed');
    expect(reply.result.id).toBe(asked.result.id);
    expect(answer(reply.result)).toContain('painted blue');
    await wokeUp('sleeper', wakes);
    // The new pod ran the probe's ask again, its request-input returning the reply at once.
    expect(JSON.stringify(provider.requests.at(-1)?.body)).toMatch(/"tool_result".*blue/);
    await asleep('sleeper');
    const got = await rpc(url('sleeper'), 'tasks/get', { id: asked.result.id });
    expect(got.result.status.state).toBe('completed');
    expect(answer(got.result)).toContain('painted blue');
  }, 480_000); // two wakes, three sleeps
});
