// Helpers of the real-node e2e tests: kubectl against the node, a busybox client pod to act from
// inside the cluster, the scripted provider as a pod. Every wait is `kubectl wait` (a watch on
// the API server) or a poll of the very state waited for (policyAdmits), never a sleep.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { stringify } from 'yaml';
import { kubectlPath } from '../cluster/harness.ts';
import { images, nodePaths, repoRoot } from '../cluster/node/config.ts';
import { runtimeImage } from '../cluster/node/operator.ts';
import type { Script } from '../provider/scripted-provider.ts';

export const kubeconfig = (): string => inject('realnode').kubeconfig;

export class KubectlError extends Error {
  constructor(
    readonly args: string[],
    readonly stderr: string,
    readonly stdout: string,
    readonly code: number | undefined,
  ) {
    super(`kubectl ${args.join(' ')} failed (exit ${code}): ${stderr.trim()}`);
  }
}

export async function kubectl(args: string[], input?: string): Promise<string> {
  return new Promise((res, rej) => {
    const child = execFile(kubectlPath(), [`--kubeconfig=${kubeconfig()}`, ...args], { maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      if (err) rej(new KubectlError(args, String(stderr), String(stdout), typeof err.code === 'number' ? err.code : undefined));
      else res(String(stdout));
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

export const apply = (yaml: string, ns?: string): Promise<string> => kubectl([...(ns ? ['-n', ns] : []), 'apply', '-f', '-'], yaml);
/** kubectl get … -o json; `what` may carry flags (`pods -l app=x`). */
export const getJson = async <T = any>(ns: string, what: string): Promise<T> =>
  JSON.parse(await kubectl(['-n', ns, 'get', ...what.split(/\s+/), '-o', 'json'])) as T;

/** kubectl wait (a watch), e.g. waitFor(ns, 'capsule/a', 'condition=Ready'). */
export const waitFor = (ns: string, what: string, cond: string, timeout = '120s'): Promise<string> =>
  kubectl(['-n', ns, 'wait', ...what.split(/\s+/), `--for=${cond}`, `--timeout=${timeout}`]);

export async function createNamespace(ns: string): Promise<void> {
  await apply(`apiVersion: v1\nkind: Namespace\nmetadata: { name: ${ns}, labels: { capsule-test: realnode } }\n`);
  // pods are admitted only once the namespace's default ServiceAccount exists
  await kubectl(['-n', ns, 'wait', '--for=jsonpath={.metadata.name}=default', 'serviceaccount/default', '--timeout=60s']).catch(async () => {
    await kubectl(['-n', ns, 'get', 'serviceaccount', 'default']);
  });
}

/** Deleted after a test file; REALNODE_KEEP=1 keeps it for a look with kubectl. */
export const deleteNamespace = async (ns: string): Promise<string> =>
  process.env.REALNODE_KEEP === '1' ? '' : kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);

/**
 * A long-running busybox pod to run commands from inside the cluster (`exec`). `apiToken`: the
 * kubelet mounts the namespace's default ServiceAccount token (audience: the API server) at
 * /var/run/secrets/kubernetes.io/serviceaccount/token, as in any pod that does not opt out.
 */
export async function clientPod(
  ns: string,
  name: string,
  labels: Record<string, string> = {},
  o: { apiToken?: boolean } = {},
): Promise<(script: string) => Promise<{ code: number; out: string }>> {
  const lbl = Object.entries({ app: name, ...labels })
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(', ');
  await apply(`apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: ${ns}, labels: { ${lbl} } }
spec:
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: ${o.apiToken === true}
  containers:
  - name: sh
    image: ${images.busybox}
    imagePullPolicy: Never
    command: [/bin/sh, -c, 'trap "exit 0" TERM; while true; do sleep 1; done']
`);
  await waitFor(ns, `pod/${name}`, 'condition=Ready');
  return async (script: string) => {
    try {
      const out = await kubectl(['-n', ns, 'exec', name, '--', '/bin/sh', '-c', script]);
      return { code: 0, out };
    } catch (e) {
      if (e instanceof KubectlError) return { code: e.code ?? -1, out: e.stdout + e.stderr };
      throw e;
    }
  };
}

/** A command's output in the node's network namespace. */
function inNodeNetns(cmd: string[]): Promise<string> {
  const netns = nodePaths(inject('realnode').name).netns;
  return new Promise<string>((res, rej) =>
    execFile('ip', ['netns', 'exec', netns, ...cmd], { maxBuffer: 64 << 20 }, (err, out, errOut) =>
      err ? rej(new Error(`${cmd.join(' ')} in ${netns}: ${String(errOut).trim() || err.message}`)) : res(String(out)),
    ),
  );
}

/**
 * Resolves once the NetworkPolicy engine admits `pod` as a source: kube-router has put its IP into
 * one of the source-pod ipsets (`KUBE-SRC-*`) it keeps for ingress rules, and a filter rule that
 * matches that set is in place, in the node's network namespace. A pod is Ready before that
 * happens (kube-router syncs on the pod's event, on its own schedule), and until then its
 * connections to a policy-protected pod are rejected ("No route to host"); real clients retry
 * through that window, a test waits it out here instead. Both halves: a sync writes the ipsets
 * first and the iptables rules after them, and a connection between the two was rejected (CI,
 * session 24: the set held the client's IP, no rule matched the set yet).
 */
export async function policyAdmits(ns: string, pod: string, timeoutMs = 90_000): Promise<void> {
  const ip = (await getJson(ns, `pod/${pod}`)).status.podIP as string;
  const member = new RegExp(`^add (KUBE-SRC-\\S+) ${ip.replaceAll('.', '\\.')}(?:\\s|$)`, 'gm');
  const deadline = Date.now() + timeoutMs;
  let state = 'in no kube-router source ipset';
  for (;;) {
    const sets = [...(await inNodeNetns(['ipset', 'save'])).matchAll(member)].map((m) => m[1]!);
    if (sets.length > 0) {
      const rules = await inNodeNetns(['iptables-save', '-t', 'filter']);
      if (sets.some((set) => rules.includes(`--match-set ${set} src`))) return;
      state = `in the source ipsets ${sets.join(', ')}, which no filter rule matches yet`;
    }
    if (Date.now() > deadline) throw new Error(`pod ${ns}/${pod} (${ip}) is ${state} after ${timeoutMs} ms: no NetworkPolicy admits it as a client`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Resolves once capsule `name`'s Service answers the client pod behind `exec`: its rollout has
 * ended (no old pod left behind the Service) and its agent card comes back through the Service
 * address. policyAdmits covers the source side of the NetworkPolicy; this covers the rest of the
 * path a first request takes — CoreDNS, kube-proxy's rule to the current pod, and kube-router's
 * chain for the destination pod, which it programs on its own schedule (a newcomer run, session 31:
 * Ready, the client admitted, and the first POST still "No route to host"). A refused connect, an
 * unresolved name or a try that timed out is that lag and is tried again, as a caller would; any
 * other failure (an HTTP error: the route works) fails at once, naming it. Each try is a real
 * request; bounded by `timeoutMs`.
 */
export async function serviceAnswers(
  exec: (script: string) => Promise<{ code: number; out: string }>,
  ns: string,
  name: string,
  timeoutMs = 90_000,
): Promise<void> {
  await kubectl(['-n', ns, 'rollout', 'status', `deployment/${name}`, `--timeout=${Math.ceil(timeoutMs / 1000)}s`]);
  const card = `http://${name}.${ns}.svc.cluster.local:8080/.well-known/agent-card.json`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await exec(`timeout 10 wget -q -O- '${card}'`);
    if (r.code === 0) return;
    // busybox's `timeout` ends a hung wget with SIGTERM: exit 143, nothing printed.
    const lag = r.code === 143 || /can't connect to remote host|bad address/.test(r.out);
    if (!lag) throw new Error(`${card} from the client pod: exit ${r.code}: ${r.out}`);
    if (Date.now() > deadline) throw new Error(`${card} still unreachable from the client pod after ${timeoutMs} ms: ${r.out}`);
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** JSON-RPC message/send body (A2A). */
export function messageSend(text: string, id = 'm-1'): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: id, role: 'user', parts: [{ kind: 'text', text }] } },
  });
}

/**
 * A shell command (busybox) that POSTs `body` to `url` and prints the response; `timeout` bounds it
 * (busybox 1.35's wget -T segfaults). `bearer`: an Authorization header (a token or API key, or a
 * shell expression such as `$(cat …)`, expanded in the pod).
 */
export function wgetPost(url: string, body: string, seconds = 60, bearer?: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const auth = bearer === undefined ? '' : ` --header "Authorization: Bearer ${bearer}"`;
  return `timeout ${seconds} wget -q -O- --header 'content-type: application/json'${auth} --post-data ${q(body)} ${q(url)}`;
}

/**
 * A ServiceAccount token with `audience` (a capsule's URL with its trailing slash: exactly its
 * --public-url, which its TokenReview asks for), minted by the API server for `sa` in `ns`
 * (created when missing) — what a capsule's projected peer token holds.
 */
export async function callerToken(ns: string, audience: string, sa = 'client'): Promise<string> {
  await kubectl(['-n', ns, 'create', 'serviceaccount', sa]).catch((e: unknown) => {
    if (!(e instanceof KubectlError && /already exists/i.test(e.stderr))) throw e;
  });
  return (await kubectl(['-n', ns, 'create', 'token', sa, '--audience', audience, '--duration', '1h'])).trim();
}

/**
 * The scripted provider (test/provider/scripted-provider.ts) as a pod + Service `provider` on port
 * 8080, running from the runtime image with its Node 24 (the file and the script from a ConfigMap).
 */
export async function providerPod(ns: string, script: Script, name = 'provider'): Promise<string> {
  const source = readFileSync(join(repoRoot, 'test', 'provider', 'scripted-provider.ts'), 'utf8');
  const cm = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `${name}-script`, namespace: ns },
    data: { 'scripted-provider.mts': source, 'script.json': JSON.stringify(script) },
  };
  await apply(JSON.stringify(cm));
  await apply(`apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: ${ns}, labels: { app: ${name} } }
spec:
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  securityContext: { runAsNonRoot: true, runAsUser: 65532 }
  containers:
  - name: provider
    image: ${runtimeImage()}
    imagePullPolicy: Never
    # Node 24 strips the types itself; the ConfigMap's symlinked files need --preserve-symlinks-main
    # for the file's "am I the main module" check
    command: [node, --preserve-symlinks-main, /provider/scripted-provider.mts, --script, /provider/script.json, --host, 0.0.0.0, --port, "8080", --record, /record/requests.jsonl]
    ports: [{ containerPort: 8080, name: http }]
    readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 }
    volumeMounts: [{ name: script, mountPath: /provider }, { name: record, mountPath: /record }]
  volumes: [{ name: script, configMap: { name: ${name}-script } }, { name: record, emptyDir: {} }]
---
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${ns} }
spec:
  selector: { app: ${name} }
  ports: [{ port: 8080, targetPort: 8080, name: http }]
`);
  await waitFor(ns, `pod/${name}`, 'condition=Ready');
  return `http://${name}.${ns}.svc.cluster.local:8080`;
}

/** An OTLP/HTTP receiver pod (otlp-pod.mts) + Service `otlp` on 4318; returns its base URL. */
export async function otlpPod(ns: string): Promise<string> {
  const source = readFileSync(join(repoRoot, 'test', 'realnode', 'otlp-pod.mts'), 'utf8');
  await apply(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'otlp-receiver', namespace: ns }, data: { 'otlp-pod.mts': source } }));
  await apply(`apiVersion: v1
kind: Pod
metadata: { name: otlp, namespace: ${ns}, labels: { app: otlp } }
spec:
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  securityContext: { runAsNonRoot: true, runAsUser: 65532 }
  containers:
  - name: otlp
    image: ${runtimeImage()}
    imagePullPolicy: Never
    command: [node, /otlp/otlp-pod.mts]
    ports: [{ containerPort: 4318, name: otlp }]
    readinessProbe: { tcpSocket: { port: 4318 }, periodSeconds: 1 }
    volumeMounts: [{ name: src, mountPath: /otlp }]
  volumes: [{ name: src, configMap: { name: otlp-receiver } }]
---
apiVersion: v1
kind: Service
metadata: { name: otlp, namespace: ${ns} }
spec:
  selector: { app: otlp }
  ports: [{ port: 4318, targetPort: 4318, name: otlp }]
`);
  await waitFor(ns, 'pod/otlp', 'condition=Ready');
  return `http://otlp.${ns}.svc.cluster.local:4318`;
}

export interface PodSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  service: string;
}

/** Follows the receiver pod's log (kubectl logs -f) until `done(spans so far)` holds; returns the spans. */
export function spansUntil(ns: string, done: (spans: PodSpan[]) => boolean, timeoutMs = 90_000): Promise<PodSpan[]> {
  return new Promise((res, rej) => {
    const spans: PodSpan[] = [];
    const child = spawn(kubectlPath(), [`--kubeconfig=${kubeconfig()}`, '-n', ns, 'logs', '-f', 'otlp'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    const timer = setTimeout(() => {
      child.kill();
      rej(new Error(`spans did not arrive in ${timeoutMs} ms; got: ${spans.map((s) => s.name).join(', ')}`));
    }, timeoutMs);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c: string) => {
      buf += c;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.startsWith('{')) spans.push(JSON.parse(line) as PodSpan);
      }
      if (done(spans)) {
        clearTimeout(timer);
        child.kill();
        res(spans);
      }
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      rej(e);
    });
  });
}

/** The requests the provider pod has answered so far (its --record file), in order. */
export async function recordedRequests(ns: string, name = 'provider'): Promise<any[]> {
  const out = await kubectl(['-n', ns, 'exec', name, '--', 'cat', '/record/requests.jsonl']);
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

export const apiKeySecret = (ns: string): string => `apiVersion: v1
kind: Secret
metadata: { name: anthropic-key, namespace: ${ns} }
stringData: { api-key: sk-ant-realnode-test }
`;

export function readExample(file: string): string {
  return readFileSync(join(repoRoot, 'examples', 'k8s', file), 'utf8');
}

/**
 * A raw TCP connection from inside a pod's container (its node), past the runtime: 'connected', or
 * what stopped it ('timeout' after 5 s, or the socket error's code). How the tests show a
 * NetworkPolicy fence holds whatever the runtime would do.
 */
export function tcpProbe(ns: string, pod: string, container: string, host: string, port: number): Promise<string> {
  return kubectl([
    '-n',
    ns,
    'exec',
    pod,
    '-c',
    container,
    '--',
    'node',
    '-e',
    `const s=require('net').connect(${port},'${host}');s.setTimeout(5000);s.on('connect',()=>{console.log('connected');process.exit(0)});` +
      `s.on('timeout',()=>{console.log('timeout');process.exit(3)});s.on('error',(e)=>{console.log(e.code);process.exit(4)})`,
  ]).then(
    (out) => out.trim(),
    (e: { stdout: string }) => e.stdout.trim(),
  );
}

/**
 * The Hook both the hook and the Prometheus tests bind: the hook-deny-shell fixture served by
 * fixturePod (its `source`), a blocking on-shell policy that denies, named shell-guard.
 */
export function shellGuardHook(ns: string, source: { url: string; sha256: string }): string {
  return JSON.stringify({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Hook',
    metadata: { name: 'shell-guard', namespace: ns },
    spec: { artifact: { name: 'hook-deny-shell', version: '0.1.0', source }, binding: 'on-shell', execution_mode: 'blocking', commit_policy: 'deny' },
  });
}

/**
 * The fixture components (`.cache/fixtures/<name>.wasm`, built by test/fixtures/build.ts from
 * test/fixtures/components/) served over HTTP by a pod + Service `fixtures` on 8080, for Capsule
 * and Hook artifacts with `source: {url, sha256}`. The components are too large for a ConfigMap
 * (1 MiB), so the pod mounts the folder from the node (hostPath: the node shares this machine's
 * filesystem). `files` are names in that folder; returns each one's URL and sha256.
 */
export async function fixturePod(ns: string, files: string[]): Promise<Record<string, { url: string; sha256: string }>> {
  const dir = join(repoRoot, '.cache', 'fixtures');
  const out: Record<string, { url: string; sha256: string }> = {};
  for (const n of files) {
    const file = join(dir, n);
    if (!existsSync(file)) throw new Error(`fixture ${file} missing: build it with node --import tsx test/fixtures/build.ts ${n.replace(/\.\w+$/, '')}`);
    out[n] = { url: `http://fixtures.${ns}.svc.cluster.local:8080/${n}`, sha256: createHash('sha256').update(readFileSync(file)).digest('hex') };
  }
  const server =
    "const fs=require('fs'),p=require('path');require('http').createServer((q,s)=>{const f=p.join('/srv',p.basename(q.url));" +
    'fs.readFile(f,(e,b)=>{if(e){s.writeHead(404);s.end();return}s.writeHead(200);s.end(b)})}).listen(8080)';
  await apply(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'fixtures', namespace: ns, labels: { app: 'fixtures' } },
      spec: {
        terminationGracePeriodSeconds: 0,
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'http',
            image: runtimeImage(),
            imagePullPolicy: 'Never',
            securityContext: { runAsUser: 0 },
            command: ['node', '-e', server],
            ports: [{ containerPort: 8080 }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
            volumeMounts: [{ name: 'srv', mountPath: '/srv', readOnly: true }],
          },
        ],
        volumes: [{ name: 'srv', hostPath: { path: dir, type: 'Directory' } }],
      },
    }),
  );
  await apply(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'fixtures', namespace: ns },
      spec: { selector: { app: 'fixtures' }, ports: [{ port: 8080, targetPort: 8080 }] },
    }),
  );
  await waitFor(ns, 'pod/fixtures', 'condition=Ready');
  return out;
}

/**
 * A Capsule of the realnode tests in namespace `ns`: the image's built-in driver-anthropic against
 * `endpoint` (the scripted provider forwarded into the node), the sandbox-probe tool from `probe`,
 * queue acceptance (depth 4, plus `lifecycle`), callers labelled role=client admitted; `extra` is
 * spread over the spec.
 */
export function probeCapsule(o: {
  ns: string;
  name: string;
  endpoint: string;
  probe: { url: string; sha256: string } | undefined;
  lifecycle?: Record<string, unknown>;
  extra?: Record<string, unknown>;
}): string {
  return stringify({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name: o.name, namespace: o.ns },
    spec: {
      version: '1.0.0',
      artifacts: [
        { name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' },
        { name: 'probe', runtime: 'tool', source: o.probe },
      ],
      inference: {
        driver: { artifact: 'driver-anthropic' },
        model: 'claude-sonnet-4-5',
        endpoint: o.endpoint,
        max_turns: 4,
        max_tokens: 256,
        system_prompt: `You are ${o.name}.`,
        apiKeySecretRef: { name: 'anthropic-key', key: 'api-key' },
      },
      lifecycle: { task_acceptance: 'queue', queue_depth: 4, ...o.lifecycle },
      ingress: { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
      ...o.extra,
    },
  });
}
