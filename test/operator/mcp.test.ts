/**
 * spec.mcp on the real API server: admission refuses the MCP server entries the runtime would
 * refuse (naming the field and index), and the operator applies what translate renders for them —
 * the murmur.yaml block, the credentials' env from Secrets, and an egress rule to exactly the pods
 * of each named Service, added when a Service that did not exist appears.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ApiError } from '../../operator/kube/client.ts';
import type { Operator } from '../../operator/operator.ts';
import { client, deleteNamespace, ensureCrds, eventually, newNamespace, operator } from './helpers.ts';

let ns = '';
let op: Operator;

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-mcp');
  op = await operator([ns]);
  await eventually('operator ready', () => op.ready());
});

afterAll(async () => {
  await op?.stop();
  await deleteNamespace(ns);
});

const DRIVER = {
  name: 'murmur-driver-anthropic',
  runtime: 'driver',
  source: { url: 'https://artifacts.example.com/driver.wasm', sha256: '9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c' },
  capabilities: { network: { allow: ['https://api.anthropic.com'] } },
};
const INFERENCE = { driver: { artifact: DRIVER.name }, model: 'm', endpoint: 'https://api.anthropic.com' };

function capsule(name: string, servers: unknown[]) {
  return {
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: ns },
    spec: { artifacts: [DRIVER], capabilities: { network: { allow: ['https://api.anthropic.com'] } }, inference: INFERENCE, mcp: { servers } },
  };
}

async function refusal(servers: unknown[]): Promise<string | undefined> {
  const err = await client.create(capsule('probe', servers), { dryRun: 'All' }).then(
    () => undefined,
    (e: ApiError) => e,
  );
  if (err && err.status !== 422) throw err;
  return err ? (err.body as { message: string }).message : undefined;
}

describe('spec.mcp admission', () => {
  it.each([
    [
      [{ name: 'docs', tools: ['*'], url: 'https://mcp.example.com/mcp', service: { name: 'docs', port: 80 } }],
      'spec.mcp.servers[0]: Invalid value: an MCP server gives url or service, not both or neither [E-OP-011]',
    ],
    [[{ name: 'docs', tools: ['*'] }], 'spec.mcp.servers[0]: Invalid value: an MCP server gives url or service, not both or neither [E-OP-011]'],
    [
      [
        { name: 'a', tools: ['x'], url: 'https://a.example.com/mcp' },
        { name: 'a', tools: ['y'], url: 'https://b.example.com/mcp' },
      ],
      'spec.mcp.servers: Invalid value: MCP server names must be unique [E-OP-011]',
    ],
    [[{ name: 'docs', tools: ['*', 'search'], url: 'https://a.example.com/mcp' }], "spec.mcp.servers[0].tools: Invalid value: '*' stands alone"],
    [
      [{ name: 'docs', tools: ['bad name'], url: 'https://a.example.com/mcp' }],
      'spec.mcp.servers[0].tools[0]: Invalid value: "bad name": invalid MCP tool name \'bad name\'',
    ],
    [
      [{ name: 'docs', tools: ['*'], url: 'https://user:pw@a.example.com/mcp' }],
      'spec.mcp.servers[0].url: Invalid value: "https://user:pw@a.example.com/mcp": invalid MCP server url \'https://user:pw@a.example.com/mcp\'',
    ],
    [
      [{ name: 'docs', tools: ['*'], url: 'ftp://a.example.com/mcp' }],
      'spec.mcp.servers[0].url: Invalid value: "ftp://a.example.com/mcp": invalid MCP server url \'ftp://a.example.com/mcp\'',
    ],
    [
      [{ name: 'docs', tools: ['*'], url: 'https://a.example.com/mcp', headers: [{ name: 'Authorization', secretKeyRef: { name: 's', key: 'k' } }] }],
      'spec.mcp.servers[0].headers[0].name: Invalid value: "Authorization": header \'Authorization\' cannot be set',
    ],
    [[{ name: 'Docs_1', tools: ['*'], url: 'https://a.example.com/mcp' }], 'spec.mcp.servers[0].name: Invalid value: "Docs_1"'],
  ])('refuses %j', async (servers, message) => {
    expect(await refusal(servers)).toContain(message);
  });

  it('admits a url server, a Service server and their credentials', async () => {
    expect(
      await refusal([
        { name: 'docs', tools: ['search'], url: 'https://mcp.example.com/mcp', tokenSecretRef: { name: 's', key: 'k' }, sampling: 'driver' },
        {
          name: 'tickets',
          tools: ['*'],
          service: { name: 'tickets', namespace: 'tools', port: 8000, path: '/v1/mcp' },
          headers: [{ name: 'X-Tenant', secretKeyRef: { name: 's', key: 't' } }],
          elicitation: 'refuse',
        },
      ]),
    ).toBeUndefined();
  });
});

describe('spec.mcp reconciled', () => {
  const path = (kind: string, name: string) =>
    ({
      ConfigMap: `/api/v1/namespaces/${ns}/configmaps/${name}`,
      NetworkPolicy: `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/${name}`,
      Deployment: `/apis/apps/v1/namespaces/${ns}/deployments/${name}`,
    })[kind]!;
  const service = (name: string, selector: Record<string, string>, port: number, targetPort: number | string) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { selector, ports: [{ port, targetPort }] },
  });
  const egressTo = (np: any, app: string) => (np?.spec.egress ?? []).find((r: any) => r.to?.[0]?.podSelector?.matchLabels?.app === app);

  it("renders the servers into murmur.yaml, their Secrets into env, and egress to exactly the named Services' pods", async () => {
    await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'mcp-creds', namespace: ns }, stringData: { token: 't' } });
    await client.create(service('docs-mcp', { app: 'docs-mcp' }, 80, 3000));
    // In the operator's caches before the Capsule arrives: its first render is already the whole
    // one, so a later change of the hash can only come from what the later tests change.
    await eventually('Secret and Service cached', () => op.controller()?.secrets.get(`${ns}/mcp-creds`) && op.controller()?.services.get(`${ns}/docs-mcp`));
    await client.create(
      capsule('analyst', [
        { name: 'docs', tools: ['search'], service: { name: 'docs-mcp', port: 80 }, tokenSecretRef: { name: 'mcp-creds', key: 'token' } },
        { name: 'later', tools: ['*'], service: { name: 'later-mcp', port: 8000 } },
      ]),
    );

    const np = await eventually('egress policy with the docs rule', async () => {
      const p = await client.get<any>(path('NetworkPolicy', 'analyst-egress'));
      return egressTo(p, 'docs-mcp') ? p : undefined;
    });
    expect(egressTo(np, 'docs-mcp')).toEqual({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } }, podSelector: { matchLabels: { app: 'docs-mcp' } } }],
      ports: [{ protocol: 'TCP', port: 3000 }],
    });
    // The Service that does not exist yet gets no rule: its pods are not reachable.
    expect(egressTo(np, 'later-mcp')).toBeUndefined();

    const cm = await client.get<any>(path('ConfigMap', 'analyst-manifest'));
    const manifest = parse(cm.data['murmur.yaml']);
    expect(manifest.mcp.servers).toEqual([
      { name: 'docs', url: `http://docs-mcp.${ns}.svc.cluster.local/mcp`, tools: ['search'], token_env: 'MURMUR_MCP_DOCS_TOKEN' },
      { name: 'later', url: `http://later-mcp.${ns}.svc.cluster.local:8000/mcp`, tools: ['*'] },
    ]);
    expect(manifest.capabilities.network.allow).toEqual([
      'https://api.anthropic.com',
      `http://docs-mcp.${ns}.svc.cluster.local`,
      `http://later-mcp.${ns}.svc.cluster.local:8000`,
    ]);

    // The Deployment is applied last (OWNED_KINDS' order): seeing the NetworkPolicy does not mean
    // it exists yet.
    const dep = await eventually('Deployment applied', () => client.get<any>(path('Deployment', 'analyst')));
    expect(dep.spec.template.spec.containers[0].env).toContainEqual({
      name: 'MURMUR_MCP_DOCS_TOKEN',
      valueFrom: { secretKeyRef: { name: 'mcp-creds', key: 'token' } },
    });

    const degraded = await eventually('Degraded McpServiceNotFound', async () => {
      const c = await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/analyst`);
      const d = c?.status?.conditions?.find((x: any) => x.type === 'Degraded');
      return d?.reason === 'McpServiceNotFound' ? d : undefined;
    });
    expect(degraded.message).toContain(`Service '${ns}/later-mcp' (MCP server 'later', spec.mcp.servers[1].service) not found`);
  });

  it('rolls the pods when the token Secret is rotated', async () => {
    const hash = async () => (await client.get<any>(path('Deployment', 'analyst')))?.spec.template.metadata.annotations['murmur.io/config-hash'];
    const before = await hash();
    await client.request('PATCH', `/api/v1/namespaces/${ns}/secrets/mcp-creds`, {
      body: { stringData: { token: 'rotated' } },
      contentType: 'application/merge-patch+json',
    });
    expect(await eventually('a new config hash', async () => ((await hash()) !== before ? hash() : undefined))).not.toBe(before);
  });

  it('adds the egress rule when the named Service appears', async () => {
    await client.create(service('later-mcp', { app: 'later-mcp' }, 8000, 'mcp'));
    const np = await eventually('egress rule to later-mcp', async () => egressTo(await client.get<any>(path('NetworkPolicy', 'analyst-egress')), 'later-mcp'));
    expect(np.ports).toEqual([{ protocol: 'TCP', port: 'mcp' }]);
  });
});
