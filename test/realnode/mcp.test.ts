// Issue 40 §2 on the real node: MCP servers on Kubernetes. Two MCP servers run as pods behind
// Services — the MCP project's reference server (@modelcontextprotocol/server-everything, from this
// checkout's node_modules mounted into the runtime image, which has Node but not the server) over
// Streamable HTTP. The Capsule lists one of them (spec.mcp.servers[].service, its token from a
// Secret): a task calls its get-sum tool through the Service and completes. The other it does not
// list: the runtime refuses a request to it (outside the allowlist the operator rendered), and from
// inside the capsule's pod a raw connection to it is blocked by the egress NetworkPolicy, while one
// to the listed server gets through.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../cluster/node/config.ts';
import { runtimeImage } from '../cluster/node/operator.ts';
import {
  apiKeySecret,
  apply,
  clientPod,
  createNamespace,
  deleteNamespace,
  getJson,
  kubectl,
  messageSend,
  policyAdmits,
  providerPod,
  recordedRequests,
  waitFor,
  wgetPost,
  tcpProbe,
} from './support.ts';

const ns = 'rn-mcp';
// The servers listen on 3001 (server-everything's default), not 8080: the capsule's egress opens
// this namespace on 8080 for the provider Service (a plain Service host), which must not admit them.
const MCP_PORT = 3001;
const svcHost = (name: string) => `${name}.${ns}.svc.cluster.local`;
const capsuleUrl = `http://${svcHost('analyst')}:8080`;
// A peer outside the cluster (a hostname grant opens its port to public addresses only), never called.
const PEER = 'http://peer.example.test:9000';

/** server-everything's Streamable HTTP transport as a pod + Service `name` (port 80 → 3001). */
async function mcpServerPod(name: string): Promise<void> {
  const main = '/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js';
  await apply(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, labels: { app: name } },
      spec: {
        terminationGracePeriodSeconds: 0,
        automountServiceAccountToken: false,
        // the node shares this machine's filesystem (as fixturePod's hostPath): the checkout's
        // node_modules holds the server and its dependencies (express, the SDK, zod)
        containers: [
          {
            name: 'mcp',
            image: runtimeImage(),
            imagePullPolicy: 'Never',
            securityContext: { runAsUser: 0 },
            command: ['node', main, 'streamableHttp'],
            env: [{ name: 'PORT', value: String(MCP_PORT) }],
            ports: [{ containerPort: MCP_PORT, name: 'mcp' }],
            readinessProbe: { tcpSocket: { port: MCP_PORT }, periodSeconds: 1 },
            volumeMounts: [{ name: 'modules', mountPath: '/mcp/node_modules', readOnly: true }],
          },
        ],
        volumes: [{ name: 'modules', hostPath: { path: join(repoRoot, 'node_modules'), type: 'Directory' } }],
      },
    }),
  );
  await apply(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: { selector: { app: name }, ports: [{ port: 80, targetPort: MCP_PORT }] },
    }),
  );
  await waitFor(ns, `pod/${name}`, 'condition=Ready');
}

function capsule(provider: string): string {
  return stringify({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name: 'analyst', namespace: ns },
    spec: {
      version: '1.0.0',
      artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
      // a peer, so the runtime offers delegate-task: the fence below asks it for the unlisted server
      capabilities: { network: { allow: [PEER] } },
      inference: {
        driver: { artifact: 'driver-anthropic' },
        model: 'claude-sonnet-4-5',
        endpoint: provider,
        max_turns: 6,
        max_tokens: 1024,
        apiKeySecretRef: { name: 'anthropic-key', key: 'api-key' },
      },
      mcp: {
        servers: [{ name: 'listed', service: { name: 'mcp-listed', port: 80 }, tools: ['get-sum'], tokenSecretRef: { name: 'mcp-token', key: 'token' } }],
      },
      ingress: { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
      a2a: { auth: { anonymous: true } },
    },
  });
}

describe('MCP servers on the real node', () => {
  let exec: Awaited<ReturnType<typeof clientPod>>;
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
    await apply(`apiVersion: v1\nkind: Secret\nmetadata: { name: mcp-token, namespace: ${ns} }\nstringData: { token: rn-mcp-token }\n`);
    // Both servers are up before the capsule's session opens (it connects to its servers then).
    await Promise.all([mcpServerPod('mcp-listed'), mcpServerPod('mcp-unlisted')]);
    const provider = await providerPod(ns, {
      turns: [
        { toolCalls: [{ name: 'mcp__listed__get-sum', input: { a: 40, b: 2 } }] },
        { text: 'The MCP server says 42.' },
        // the fence: a request to the server the capsule does not list
        { toolCalls: [{ name: 'delegate-task', input: { peer: `http://${svcHost('mcp-unlisted')}`, task: 'Should never arrive.' } }] },
        { text: 'The other server is out of reach.' },
      ],
    });
    await apply(capsule(provider));
    await waitFor(ns, 'capsule/analyst', 'condition=Ready', '180s');
    // Ready can come before a second render has rolled the pods (seen once under load: the first
    // request then met the old pod's address, 'No route to host'): wait for the rollout to end.
    await kubectl(['-n', ns, 'rollout', 'status', 'deployment/analyst', '--timeout=180s']);
    exec = await clientPod(ns, 'client', { role: 'client' });
    await policyAdmits(ns, 'client');
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  it('the operator renders the listed server: its Service URL in murmur.yaml, its token from the Secret, egress to its pods on the target port', async () => {
    const cm = await getJson(ns, 'configmap analyst-manifest');
    const manifest = parse(cm.data['murmur.yaml']);
    expect(manifest.mcp.servers).toEqual([
      { name: 'listed', url: `http://${svcHost('mcp-listed')}/mcp`, tools: ['get-sum'], token_env: 'MURMUR_MCP_LISTED_TOKEN' },
    ]);
    expect(manifest.capabilities.network.allow).toEqual([PEER, `http://${svcHost('mcp-listed')}`]);
    const egress = (await getJson(ns, 'networkpolicy analyst-egress')).spec.egress;
    expect(egress).toContainEqual({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } }, podSelector: { matchLabels: { app: 'mcp-listed' } } }],
      ports: [{ protocol: 'TCP', port: MCP_PORT }],
    });
    expect(JSON.stringify(egress)).not.toContain('mcp-unlisted');
  });

  it("a task calls the listed server's get-sum through its Service and completes", async () => {
    const r = await exec(wgetPost(`${capsuleUrl}/`, messageSend('What is 40 + 2? Ask the MCP server.'), 90));
    expect(r.code, r.out).toBe(0);
    const body = JSON.parse(r.out);
    expect(body.result.status.state).toBe('completed');
    expect(JSON.stringify(body.result)).toContain('The MCP server says 42.');
    // the tool result the model got back is server-everything's answer
    const reqs = await recordedRequests(ns);
    expect(JSON.stringify(reqs[1]?.body?.messages?.at(-1))).toContain('The sum of 40 and 2 is 42.');
  });

  it('the runtime refuses a request to the server the capsule does not list', async () => {
    const r = await exec(wgetPost(`${capsuleUrl}/`, messageSend('Try the other server.', 'm-2'), 90));
    expect(r.code, r.out).toBe(0);
    const reqs = await recordedRequests(ns);
    const toolResult = JSON.stringify(reqs[3]?.body?.messages?.at(-1));
    expect(toolResult).toContain('"is_error":true');
    expect(toolResult).toContain('mcp-unlisted');
  });

  it("from inside the capsule's pod, the listed server is reachable and the unlisted one is blocked by the NetworkPolicy", async () => {
    const pods = await getJson(ns, 'pods -l app.kubernetes.io/instance=analyst');
    const pod = pods.items[0].metadata.name;
    const probe = (host: string) => tcpProbe(ns, pod, 'runtime', host, 80);
    expect(await probe(svcHost('mcp-listed'))).toBe('connected');
    expect(await probe(svcHost('mcp-unlisted'))).not.toBe('connected');
  });
});
