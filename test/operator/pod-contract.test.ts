/**
 * The runtime container contract, end to end without a container engine: translate a Capsule,
 * then start the real runtime (`bin/mur`) exactly as the rendered Deployment would — its args,
 * its env (Secret and downward-API values filled in), the ConfigMap's murmur.yaml at the mount
 * path — with the container paths mapped to temp dirs and the ports to free ones. The runtime
 * must accept the manifest and flags, answer the probes on the metrics port, advertise the
 * Service URL in its agent card, and complete an A2A task against the scripted provider. The pod
 * authenticates its callers as rendered (ServiceAccount tokens by default, verified with a
 * TokenReview against the test cluster's API server: the runtime gets the admin kubeconfig in
 * place of the pod's in-cluster credentials); the test calls it with a real token whose audience
 * is the Service URL, and without one is refused. The pod serves gRPC on its a2a port, as the
 * card says, to the SDK's gRPC client.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import type { Capsule, KubeObject } from '../../operator/api/types.ts';
import { CONFIG_DIR, WORKDIR } from '../../operator/translate/builders/common.ts';
import { STORE_DIR } from '../../operator/translate/builders/store-claim.ts';
import { translate } from '../../operator/translate/index.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { publish } from '../../runtime/registry/registry.ts';
import { buildFixture, sourceDir } from '../fixtures/build.ts';
import { loadScript, startScriptedProvider } from '../provider/scripted-provider.ts';
import { deleteNamespace, eventually, kubeconfig, kubectl, newNamespace, repoRoot } from './helpers.ts';

const tmp = mkdtempSync(join(tmpdir(), 'pod-contract-'));
let provider: Awaited<ReturnType<typeof startScriptedProvider>>;
const children: ChildProcess[] = [];
let quickProvider: Awaited<ReturnType<typeof startScriptedProvider>>;
let log = '';
let callerNs = '';

/** A ServiceAccount token of the caller namespace's `client` for this audience (a pod URL). */
async function callerToken(audience: string): Promise<string> {
  const r = await kubectl(['create', 'token', 'client', '-n', callerNs, '--audience', audience]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

beforeAll(async () => {
  callerNs = await newNamespace('pod-contract');
  expect((await kubectl(['create', 'serviceaccount', 'client', '-n', callerNs])).code).toBe(0);
  const registry = join(tmp, 'registry');
  mkdirSync(registry);
  for (const name of ['driver-anthropic', 'greet']) {
    const wasm = await buildFixture(name);
    const staging = join(tmp, 'artifacts', name);
    mkdirSync(staging, { recursive: true });
    copyFileSync(join(sourceDir(name), 'murmur.yaml'), join(staging, 'murmur.yaml'));
    copyFileSync(wasm, join(staging, 'component.wasm'));
    publish(registry, staging);
  }
  provider = await startScriptedProvider(loadScript(join(repoRoot, 'examples/hello/provider-script.json')));
  quickProvider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: 'date', input: { command: '+%Y' } }] }, { text: 'It is a fine day.' }] });
}, 300_000);

afterAll(async () => {
  if (process.env.POD_CONTRACT_LOG) console.error(log);
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await provider?.stop();
  await quickProvider?.stop();
  rmSync(tmp, { recursive: true, force: true });
  if (callerNs) await deleteNamespace(callerNs);
});

/** A running pod, as far as this machine can make one: the real runtime, started as the Deployment says. */
interface Pod {
  /** The runtime process (SIGTERM it as the kubelet would to delete the pod). */
  proc: ChildProcess;
  a2aPort: number;
  a2aUrl: string;
  /** message/send with `bearer` (default: a ServiceAccount token for this pod's Service URL). */
  send(text: string, bearer?: string | null): Promise<any>;
}

/**
 * Translates the Capsule, lays out the pod's filesystem (the ConfigMap at its mount path, the
 * workdir volume), maps ports and container paths, fills env from the Secret and the downward
 * API, starts `bin/mur` with the container's args, and waits for the readiness probe.
 */
async function startPod(capsule: Capsule, name: string, claimDir?: string): Promise<Pod> {
  const r = translate({
    capsule,
    hooks: {},
    secrets: {
      [capsule.spec.inference!.apiKeySecretRef!.name]: {
        name: capsule.spec.inference!.apiKeySecretRef!.name,
        resourceVersion: '1',
        keys: [capsule.spec.inference!.apiKeySecretRef!.key],
      },
    },
    callers: [],
    capsulePorts: { [`${capsule.metadata.namespace}/${capsule.metadata.name}`]: 8080 },
    options: defaultOptions(),
  });
  expect(r.problems).toEqual([]);
  const cm = r.objects.find((o) => o.kind === 'ConfigMap') as KubeObject & { data: Record<string, string> };
  const dep = r.objects.find((o) => o.kind === 'Deployment') as any;
  const ctr = dep.spec.template.spec.containers[0];

  const root = join(tmp, name);
  // Volumes: the ConfigMap, the workdir emptyDir (always a fresh dir: a new pod), a store claim (`claimDir`: kept across pods).
  const mounts: Record<string, string> = {
    [CONFIG_DIR]: join(root, 'etc-murmur-capsule'),
    [WORKDIR]: join(root, 'var-lib-murmur'),
    [STORE_DIR]: claimDir ?? join(root, 'claim'),
  };
  for (const d of Object.values(mounts)) mkdirSync(d, { recursive: true });
  writeFileSync(join(mounts[CONFIG_DIR]!, 'murmur.yaml'), cm.data['murmur.yaml']!);
  // A container path (bare, or in a `sqlite:` store URL) under a mount, mapped to its dir here.
  const mapPath = (s: string) => {
    const m = /^(sqlite:)?(\/.*)$/.exec(s);
    const hit = m && Object.keys(mounts).find((from) => m[2] === from || m[2]!.startsWith(`${from}/`));
    return hit ? `${m[1] ?? ''}${mounts[hit]}${m[2]!.slice(hit.length)}` : s;
  };

  const a2aPort = await freePort();
  const metricsPort = await freePort();
  const args: string[] = ctr.args.map((a: string, i: number, all: string[]) =>
    all[i - 1] === '--a2a-port' ? String(a2aPort) : all[i - 1] === '--metrics-port' ? String(metricsPort) : mapPath(a),
  );
  // Outside a pod the runtime's TokenReview client reads $KUBECONFIG (in a pod: the projected kube-api-access volume).
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', MURMUR_REGISTRY: join(tmp, 'registry'), KUBECONFIG: kubeconfig };
  for (const e of ctr.env) {
    if (e.value !== undefined) env[e.name] = mapPath(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = 'test-api-key';
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = `${capsule.metadata.name}-7d4b9-x2x1z`;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[e.name] = capsule.metadata.namespace!;
  }
  expect(Object.keys(env)).toEqual(expect.arrayContaining(['MURMUR_INFERENCE_API_KEY', 'POD_NAME', 'POD_NAMESPACE', 'HOME', 'MURMUR_CACHE_DIR']));

  const proc = spawn(process.execPath, [join(repoRoot, 'bin/mur'), ...args], { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));

  // Probes, as the kubelet would call them: on the named port "metrics".
  expect(ctr.readinessProbe.httpGet.port).toBe('metrics');
  const probe = (path: string) =>
    fetch(`http://127.0.0.1:${metricsPort}${path}`).then(
      (x) => x.status,
      () => 0,
    );
  await eventually(
    `readiness ${ctr.readinessProbe.httpGet.path} (log: ${log})`,
    async () => (await probe(ctr.readinessProbe.httpGet.path)) === 200,
    60_000,
    200,
  );
  expect(await probe(ctr.livenessProbe.httpGet.path)).toBe(200);

  return {
    proc,
    a2aPort,
    a2aUrl: r.a2aUrl,
    async send(text: string, bearer?: string | null) {
      const token = bearer === undefined ? await callerToken(`${r.a2aUrl}/`) : bearer;
      return rpc(a2aPort, token, 'message/send', { message: { kind: 'message', role: 'user', messageId: `m-${name}`, parts: [{ kind: 'text', text }] } });
    },
  };
}

async function rpc(port: number, token: string | null, method: string, params: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.json();
}

describe('runtime container contract', () => {
  it('the real runtime starts from the rendered Deployment and ConfigMap and serves an A2A task', async () => {
    const capsule: Capsule = {
      apiVersion: 'murmur.io/v1alpha1',
      kind: 'Capsule',
      metadata: { name: 'hello', namespace: 'team', uid: 'u-1', generation: 1 },
      spec: {
        version: '1.0.0',
        artifacts: [
          { name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' },
          { name: 'greet', version: '1.0.0', runtime: 'tool' },
        ],
        capabilities: { shell: { allow: ['echo', 'wc'] } },
        inference: {
          driver: { artifact: 'driver-anthropic' },
          model: 'claude-sonnet-4-5',
          endpoint: provider.url,
          max_turns: 6,
          max_tokens: 1024,
          system_prompt: 'You are a friendly greeter. Use the greet tool, then confirm with the shell.',
          apiKeySecretRef: { name: 'key', key: 'api-key' },
        },
        lifecycle: { task_acceptance: 'queue', queue_depth: 2 },
      },
    };
    const pod = await startPod(capsule, 'hello');
    const card = await (await fetch(`http://127.0.0.1:${pod.a2aPort}/.well-known/agent-card.json`)).json();
    expect(JSON.stringify(card)).toContain(pod.a2aUrl);
    // The card says how to authenticate: a ServiceAccount token, required (no anonymous access rendered).
    expect(card.securitySchemes.serviceAccount).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(card.security).toEqual([{ serviceAccount: [] }]);
    const anonymous = await pod.send('Greet the world.', null);
    expect(anonymous.error?.message).toMatch(/authentication required/);
    const otherAudience = await pod.send('Greet the world.', await callerToken('http://someone-else.team.svc.cluster.local:8080/'));
    expect(otherAudience.error?.message).toBe('invalid credentials');

    const body = await pod.send('Greet the world.');
    expect(body.error, log).toBeUndefined();
    expect(body.result.status.state).toBe('completed');
    expect(JSON.stringify(body.result)).toContain('Hello, world!');
    // The provider saw the key from the Secret.
    expect(JSON.stringify(provider.requests.at(-1)?.headers ?? {})).toContain('test-api-key');
  }, 120_000);

  it('examples/k8s/quickstart.yaml runs with only what the runtime image ships (its built-in registry)', async () => {
    const capsule = parseYaml(readFileSync(join(repoRoot, 'examples/k8s/quickstart.yaml'), 'utf8')) as Capsule;
    capsule.metadata = { ...capsule.metadata, namespace: 'team', uid: 'u-2', generation: 1 };
    // Everything as shipped except where the provider is: the scripted one instead of api.anthropic.com.
    expect(capsule.spec.inference!.endpoint).toBe('https://api.anthropic.com');
    capsule.spec.inference!.endpoint = quickProvider.url;
    const pod = await startPod(capsule, 'quickstart');
    const body = await pod.send('What is the date?');
    expect(body.error, log).toBeUndefined();
    expect(body.result.status.state).toBe('completed');
    expect(JSON.stringify(body.result)).toContain('It is a fine day.');
  }, 120_000);

  it('the rendered pod serves gRPC on its a2a port (--grpc-port same): the card names the Service host:port, a token for the Service URL is accepted', async () => {
    const grpcProvider = await startScriptedProvider({ turns: [{ text: 'Answered over gRPC.' }] });
    try {
      const capsule: Capsule = {
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'caller', namespace: 'team', uid: 'u-4', generation: 1 },
        spec: {
          artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
          inference: {
            driver: { artifact: 'driver-anthropic' },
            model: 'claude-sonnet-4-5',
            endpoint: grpcProvider.url,
            apiKeySecretRef: { name: 'key', key: 'api-key' },
          },
        },
      };
      const pod = await startPod(capsule, 'caller');
      const card = await new DefaultAgentCardResolver().resolve(`http://127.0.0.1:${pod.a2aPort}/`);
      const grpcIface = card.supportedInterfaces.find((i) => i.protocolBinding === 'GRPC');
      expect(grpcIface?.url).toBe(new URL(pod.a2aUrl).host);
      // What kube-proxy does for an in-cluster caller: the Service's host:port reaches the pod's a2a port.
      const here = { ...card, supportedInterfaces: [{ ...grpcIface!, url: `127.0.0.1:${pod.a2aPort}` }] };
      const client = await new ClientFactory({ transports: [new GrpcTransportFactory()], preferredTransports: ['GRPC'] }).createFromAgentCard(here);
      const send = () => ({
        tenant: '',
        message: {
          messageId: `m-grpc-${crypto.randomUUID()}`,
          contextId: '',
          taskId: '',
          role: Role.ROLE_USER,
          parts: [{ content: { $case: 'text' as const, value: 'Say something.' }, metadata: undefined, filename: '', mediaType: '' }],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        configuration: undefined,
        metadata: undefined,
      });
      await expect(client.sendMessage(send())).rejects.toThrow(/authentication required/);
      const token = await callerToken(`${pod.a2aUrl}/`);
      const task = (await client.sendMessage(send(), { serviceParameters: { authorization: `Bearer ${token}` } })) as Task;
      expect(task.status?.state, log).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(JSON.stringify(task.artifacts)).toContain('Answered over gRPC.');
    } finally {
      await grpcProvider.stop();
    }
  }, 120_000);

  it('on a store claim, a task outlives its pod: a new pod (fresh workdir, same claim) answers tasks/get', async () => {
    const napProvider = await startScriptedProvider({ turns: [{ text: 'Remembered across the nap.' }] });
    try {
      const capsule: Capsule = {
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'napper', namespace: 'team', uid: 'u-3', generation: 1 },
        spec: {
          artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
          inference: {
            driver: { artifact: 'driver-anthropic' },
            model: 'claude-sonnet-4-5',
            endpoint: napProvider.url,
            apiKeySecretRef: { name: 'key', key: 'api-key' },
          },
          store: { embedded: { volumeClaim: { size: '1Gi' } } },
        },
      };
      const claim = join(tmp, 'napper-claim');
      const first = await startPod(capsule, 'napper-1', claim);
      const sent = await first.send('Remember this.');
      expect(sent.error, log).toBeUndefined();
      expect(sent.result.status.state).toBe('completed');
      // The pod is deleted (SIGTERM, as the kubelet does when the capsule sleeps); a new one starts on the claim.
      const exited = new Promise((res) => first.proc.once('exit', res));
      first.proc.kill('SIGTERM');
      await exited;
      const second = await startPod(capsule, 'napper-2', claim);
      const got = await rpc(second.a2aPort, await callerToken(`${second.a2aUrl}/`), 'tasks/get', { id: sent.result.id });
      expect(got.error, log).toBeUndefined();
      expect(got.result.status.state).toBe('completed');
      expect(JSON.stringify(got.result)).toContain('Remembered across the nap.');
    } finally {
      await napProvider.stop();
    }
  }, 120_000);
});
