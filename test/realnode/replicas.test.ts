// Issue 13 §2 on the real node: a Capsule with `replicas: 3` on the shared PostgreSQL store. The
// server is a real PostgreSQL on the node's host side (host-services.ts: in the node's network
// namespace, on the node's address), named in the cluster by a selector-less Service + EndpointSlice;
// the URL (with its password) reaches the pods from a Secret, and `spec.store.postgres.address`
// opens the capsule's egress to it, while another capsule's pods stay shut out by their policy.
// Every A2A method works whichever pod answers: each step sends to one pod's IP directly, so the
// test knows which pod served it, and asserts it is another pod than the one running the task
// (whose runner, in the store's murmur_task_runner table, is the replica id that pod logged at
// start). Through the capsule's Service, kube-proxy spreads new connections over the pods.
// The scripted provider runs in this process (its `hold` says when a request is in flight, and
// lets the test decide when it ends: no sleeps), reached by the pods at the node's address too.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { gate } from '../cli/serve-kit.ts';
import { alive } from '../cluster/node/node.ts';
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
  kubectl,
  policyAdmits,
  serviceAnswers,
  waitFor,
  probeCapsule,
} from './support.ts';

const ns = 'rn-replicas';
const PG_PORT = 5432;
const PROVIDER_PORT = 18080;
const serviceUrl = `http://many.${ns}.svc.cluster.local:8080`;
const probe = 'sandbox-probe.wasm';

const turns: ScriptTurn[] = [];
const cleanup: (() => Promise<unknown>)[] = [];
let provider: ScriptedProvider;
let forward: Forward;
let store: NodePostgres;
let exec: Awaited<ReturnType<typeof clientPod>>;
let token = '';
/** The runtime pods: name, IP, and the replica id each logged when it joined the replica bus. */
let pods: Array<{ name: string; ip: string; replica: string }> = [];

function capsule(name: string, extra: Record<string, unknown>, sources: Record<string, { url: string; sha256: string }>): string {
  return probeCapsule({ ns, name, endpoint: forward.url, probe: sources[probe], lifecycle: { conversation: 'threaded' }, extra });
}

/** One A2A 1.0 JSON-RPC call from the client pod to `url` (a new connection each time). */
async function call(url: string, method: string, params: unknown): Promise<{ result: any; error: any }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }).replace(/'/g, `'\\''`);
  const r = await exec(
    `timeout 60 wget -q -O- --header 'content-type: application/json' --header 'A2A-Version: 1.0' --header 'Authorization: Bearer ${token}' --post-data '${body}' '${url}/'`,
  );
  expect(r.code, `${method} to ${url}: ${r.out}`).toBe(0);
  const parsed = JSON.parse(r.out);
  return { result: parsed.result, error: parsed.error };
}
const at = (i: number) => `http://${pods[i]!.ip}:8080`;
const msg = (text: string, extra: Record<string, unknown> = {}) => ({ messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra });
const taskOf = (result: any): any => result?.task ?? result;
const responseText = (task: any): string => (task.artifacts ?? []).flatMap((a: any) => a.parts.map((p: any) => p.text ?? '')).join('');

/** The replica that runs (ran) task `id`, as the store records it. */
async function runnerOf(id: string): Promise<string> {
  const c = await store.server.admin('murmur');
  try {
    const r = await c.query('SELECT replica FROM murmur_task_runner WHERE task_id = $1', [id]);
    return String(r.rows[0]?.replica);
  } finally {
    await c.end();
  }
}
const podOf = (replica: string) => pods.findIndex((p) => p.replica === replica);

beforeAll(async () => {
  await createNamespace(ns);
  provider = await startScriptedProvider({ turns });
  forward = await forwardIntoNode(PROVIDER_PORT, provider.port, 'provider');
  store = await startNodePostgres(PG_PORT);
  const url = await store.podUrl('murmur', `postgres.${ns}.svc.cluster.local`);
  await apply(hostServiceYaml(ns, 'postgres', PG_PORT));
  await apply(apiKeySecret(ns));
  await apply(stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'store', namespace: ns }, stringData: { url } }));
  const sources = await fixturePod(ns, [probe]);
  await apply(
    capsule('many', { replicas: 3, store: { postgres: { urlSecretRef: { name: 'store', key: 'url' }, address: `${nodeAddress}:${PG_PORT}` } } }, sources),
  );
  // another capsule of the namespace, on the embedded store: its policy does not open the server
  await apply(capsule('outsider', {}, sources));
  exec = await clientPod(ns, 'client', { role: 'client' });
  token = await callerToken(ns, `${serviceUrl}/`);
  await Promise.all(['many', 'outsider'].map((c) => waitFor(ns, `capsule/${c}`, 'condition=Ready', '300s')));
  await policyAdmits(ns, 'client');
  await serviceAnswers(exec, ns, 'many');
}, 420_000);

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  await deleteNamespace(ns);
  await forward?.stop();
  await provider?.stop();
  await store?.stop();
});

describe('a Capsule with replicas: 3 on the shared PostgreSQL store, on the real node', () => {
  it('goes Ready with three runtime pods Ready, each a replica of its own on the one server, connected through the Service to the node-hosted PostgreSQL', async () => {
    await kubectl(['-n', ns, 'rollout', 'status', 'deployment/many', '--timeout=120s']);
    const list = (await getJson(ns, 'pods -l app.kubernetes.io/instance=many')).items.filter((p: any) => !p.metadata.deletionTimestamp);
    expect(list).toHaveLength(3);
    for (const p of list)
      expect(
        p.status.containerStatuses.every((c: any) => c.ready && c.state.running),
        p.metadata.name,
      ).toBe(true);
    pods = await Promise.all(
      list.map(async (p: any) => {
        const log = await kubectl(['-n', ns, 'logs', p.metadata.name, '-c', 'runtime']);
        const m = /store: postgres [^\n]*replica (\d+)/.exec(log);
        expect(m, `${p.metadata.name} did not join the replica bus:\n${log}`).not.toBeNull();
        return { name: p.metadata.name as string, ip: p.status.podIP as string, replica: m![1]! };
      }),
    );
    expect(new Set(pods.map((p) => p.replica)).size).toBe(3);
    // the URL was the Secret's (the password is nowhere in the pod spec or the logs)
    const dep = await getJson(ns, 'deployment/many');
    expect(JSON.stringify(dep)).not.toContain('postgresql://');
    // the server sees each pod: their connections come from the three pod IPs
    const c = await store.server.admin();
    const seen = (await c.query("SELECT DISTINCT host(client_addr) AS ip FROM pg_stat_activity WHERE datname = 'murmur' AND client_addr IS NOT NULL")).rows.map(
      (r) => r.ip,
    );
    await c.end();
    expect(seen.sort()).toEqual(pods.map((p) => p.ip).sort());
    // the egress policy opens exactly the store's address
    const egress = (await getJson(ns, 'networkpolicy/many-egress')).spec.egress;
    expect(egress).toContainEqual({ to: [{ ipBlock: { cidr: `${nodeAddress}/32` } }], ports: [{ protocol: 'TCP', port: PG_PORT }] });
  });

  it("only this capsule reaches the server: a replica connects to it, another capsule's pod is stopped by its NetworkPolicy", async () => {
    // The name is resolved first (its own step: a slow DNS answer on a loaded node is not a
    // refused connection), then a TCP connection to the address; a refusal by the policy is
    // immediate (kube-router rejects), the timeout only bounds a hang.
    const tcp = (pod: string, host: string) =>
      kubectl([
        '-n',
        ns,
        'exec',
        pod,
        '-c',
        'runtime',
        '--',
        'node',
        '-e',
        `require('dns').lookup('${host}',(err,ip)=>{if(err){console.log('lookup '+err.code);process.exit(5)}` +
          `const s=require('net').connect(${PG_PORT},ip);s.setTimeout(20000);s.on('connect',()=>{console.log('connected');process.exit(0)});` +
          `s.on('timeout',()=>{console.log('timeout');process.exit(3)});s.on('error',(e)=>{console.log(e.code);process.exit(4)})})`,
      ]).then(
        (out) => out.trim(),
        (e: { stdout: string }) => e.stdout.trim(),
      );
    const outsider = (await getJson(ns, 'pods -l app.kubernetes.io/instance=outsider')).items[0].metadata.name;
    for (const host of [`postgres.${ns}.svc.cluster.local.`, nodeAddress]) {
      expect(await tcp(pods[0]!.name, host), host).toBe('connected');
      const refused = await tcp(outsider, host);
      expect(refused, host).not.toBe('connected');
      expect(refused, host).not.toMatch(/^lookup/); // the name resolves: it is the connection that is refused
    }
    const egress = JSON.stringify((await getJson(ns, 'networkpolicy/outsider-egress')).spec.egress);
    expect(egress).not.toContain(`"port":${PG_PORT}`);
  });

  it('message/send on one pod; tasks/get and ListTasks on the two others answer for it', async () => {
    turns.push({ text: 'the first answer' });
    const sent = await call(at(0), 'SendMessage', { message: msg('one') });
    const task = taskOf(sent.result);
    expect(task.status.state, JSON.stringify(sent)).toBe('TASK_STATE_COMPLETED');
    expect(podOf(await runnerOf(task.id))).toBe(0);
    for (const i of [1, 2]) {
      const got = await call(at(i), 'GetTask', { id: task.id });
      expect(got.result.status.state).toBe('TASK_STATE_COMPLETED');
      expect(responseText(got.result)).toBe('the first answer');
    }
    const listed = await call(at(1), 'ListTasks', { includeArtifacts: true });
    const mine = (listed.result.tasks as any[]).find((t) => t.id === task.id);
    expect(mine?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(responseText(mine)).toBe('the first answer');
  });

  it("through the capsule's Service, new connections land on different pods, and every pod answers tasks/get for each task", async () => {
    const runners = new Set<number>();
    const ids: string[] = [];
    // kube-proxy picks a pod per connection at random: a few sends reach two pods (12 all on one: p = 3·3⁻¹²)
    for (let n = 0; n < 12 && runners.size < 2; n++) {
      turns.push({ text: `through the Service ${n}` });
      const sent = await call(serviceUrl, 'SendMessage', { message: msg(`via the Service ${n}`) });
      const task = taskOf(sent.result);
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      runners.add(podOf(await runnerOf(task.id)));
      ids.push(task.id);
    }
    expect(runners.size).toBe(2);
    expect([...runners].every((i) => i >= 0)).toBe(true);
    for (const id of ids) {
      for (const i of [0, 1, 2]) expect((await call(at(i), 'GetTask', { id })).result.status.state).toBe('TASK_STATE_COMPLETED');
    }
  });

  it('tasks/cancel on another pod reaches the pod running the task and cancels it there', async () => {
    const g = gate();
    cleanup.push(async () => g.open());
    turns.push({ hold: g.hold, text: 'never delivered' });
    const sent = await call(at(0), 'SendMessage', { message: msg('take your time'), configuration: { returnImmediately: true } });
    const id = taskOf(sent.result).id;
    await g.arrival; // pod 0's runner is in its provider call
    expect(podOf(await runnerOf(id))).toBe(0);
    const canceled = await call(at(1), 'CancelTask', { id });
    expect(canceled.error, JSON.stringify(canceled.error)).toBeUndefined();
    expect(canceled.result.status.state).toBe('TASK_STATE_CANCELED');
    expect((await call(at(2), 'GetTask', { id })).result.status.state).toBe('TASK_STATE_CANCELED');
    const again = await call(at(2), 'CancelTask', { id });
    expect(again.error?.message).toMatch(/cannot be canceled/);
  });

  it('the reply to an input-required task, sent to another pod, reaches the session waiting for it and completes the task', async () => {
    turns.push({ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'painted blue' });
    const asked = await call(at(1), 'SendMessage', { message: msg('paint it') });
    const task = taskOf(asked.result);
    expect(task.status.state, JSON.stringify(asked)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(podOf(await runnerOf(task.id))).toBe(1);
    const replied = await call(at(2), 'SendMessage', { message: msg('blue', { taskId: task.id, contextId: task.contextId }) });
    expect(replied.error, JSON.stringify(replied.error)).toBeUndefined();
    expect(taskOf(replied.result).status.state).toBe('TASK_STATE_COMPLETED');
    expect(responseText(taskOf(replied.result))).toBe('painted blue');
    // the waiting tool got the answer: it went back to the provider as the tool's result
    expect(JSON.stringify(provider.requests.at(-1)!.body)).toContain('blue');
    expect((await call(at(0), 'GetTask', { id: task.id })).result.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('a threaded follow-up on each pod in turn continues the context, with the history every pod wrote', async () => {
    turns.push({ text: 'noted: lantern' }, { text: 'noted: harbour' }, { text: 'noted: willow' }, { text: 'lantern, harbour, willow' });
    const first = await call(at(0), 'SendMessage', { message: msg('remember the word lantern') });
    const contextId = taskOf(first.result).contextId;
    for (const [i, word] of [
      [1, 'harbour'],
      [2, 'willow'],
    ] as const) {
      const r = await call(at(i), 'SendMessage', { message: msg(`remember the word ${word}`, { contextId }) });
      expect(taskOf(r.result).status.state).toBe('TASK_STATE_COMPLETED');
      expect(podOf(await runnerOf(taskOf(r.result).id))).toBe(i);
    }
    // back on the first pod: what it held of the context is stale; the store has all of it
    const last = await call(at(0), 'SendMessage', { message: msg('which words?', { contextId }) });
    expect(responseText(taskOf(last.result))).toBe('lantern, harbour, willow');
    const body = JSON.stringify(provider.requests.at(-1)!.body);
    const order = [
      'remember the word lantern',
      'noted: lantern',
      'remember the word harbour',
      'noted: harbour',
      'remember the word willow',
      'noted: willow',
      'which words?',
    ];
    const where = order.map((s) => body.indexOf(s));
    expect(
      where.every((i) => i >= 0),
      body,
    ).toBe(true);
    expect([...where].sort((a, b) => a - b)).toEqual(where);
    expect(body.split('remember the word harbour').length).toBe(2);
  });

  it('stopping the host-side server and forwarder leaves no process and no file of theirs behind', async () => {
    const { pid, dir } = store.server;
    await store.stop();
    await forward.stop();
    expect(alive(pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(join(dir, '..'))).toEqual([]);
  });
});
