/**
 * A Capsule that takes API keys sleeps, and its status carries what the activator checks callers
 * with: HMAC-SHA256 under the activator key of each key of its Secret (status.sleep.apiKeyDigests),
 * kept current while it sleeps. On the real API server, with the operator's own controller; a real
 * `mur serve` stands in for the pod's runtime (idle readings and the card, as in sleep.test.ts).
 */
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capsule, KubeObject } from '../../operator/api/types.ts';
import type { Operator } from '../../operator/operator.ts';
import { defaultOptions } from '../../operator/translate/options.ts';
import { freePort, serve, type Served } from '../cli/serve-kit.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, kubectl, newNamespace, operator } from './helpers.ts';

const ACTIVATOR_KEY = Buffer.from('sleep-apikeys-activator-key-0123456789abcdef');
/** The digests as the activator recomputes them from a bearer token: HMAC-SHA256(activator key, key), hex. */
const digestsOf = (keys: string[]) => keys.map((k) => createHmac('sha256', ACTIVATOR_KEY).update(k).digest('hex')).sort();
const KEY_CI = 'ci-bot-key-0123456789abcdef';
const KEY_OPS = 'ops-key-0123456789abcdefgh';
const KEY_NEW = 'rotated-ci-bot-key-9876543210';

let served: Served | undefined;
let provider: ScriptedProvider | undefined;
let metricsPort = 0;

beforeAll(async () => {
  if (!cluster.podsBecomeReady) return;
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  provider = await startScriptedProvider({ turns: [{ text: 'done' }], onExhausted: 'repeat-last' });
  const dir = tmp('sleep-keyed-');
  writeFileSync(join(dir, 'murmur.yaml'), capsuleYaml({ name: 'keyed' }));
  metricsPort = await freePort();
  served = await serve(dir, {
    registry,
    workRoot: tmp('sleep-keyed-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--metrics-port', String(metricsPort)],
  });
}, 300_000);

afterAll(async () => {
  await served?.stop();
  await provider?.stop();
});

describe.skipIf(!cluster.podsBecomeReady)('a sleeping Capsule that takes API keys, on a real API server', () => {
  let ns = '';
  let op: Operator | undefined;
  const isKeyed = (pod: KubeObject) => pod.metadata.labels?.['murmur.io/capsule'] === 'keyed';
  const get = () => client.get<Capsule>(`/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/keyed`);
  const replicas = async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/keyed`))?.spec.replicas;
  const secret = (data: Record<string, string>, resourceVersion?: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'keyed-keys', namespace: ns, ...(resourceVersion ? { resourceVersion } : {}) },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  });

  beforeAll(async () => {
    await ensureCrds();
    ns = await newNamespace('op-sleep-keys');
    // The activator, as its Service's slice shows it (the activator itself is tested apart).
    await client.create({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'act-1', namespace: ns, labels: { 'kubernetes.io/service-name': 'act', 'endpointslice.kubernetes.io/managed-by': 'test' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8012, protocol: 'TCP' }],
      endpoints: [{ addresses: ['10.9.9.9'], conditions: { ready: true } }],
    });
    const store = await kubectl(['create', 'secret', 'generic', 'store', '-n', ns, '--from-literal=url=postgresql://m@10.20.0.5:5432/c']);
    expect(store.code, store.stderr).toBe(0);
    // As `kubectl create secret --from-file` of `echo`ed keys holds them: with a trailing newline.
    await client.create(secret({ 'ci-bot': `${KEY_CI}\n`, ops: KEY_OPS }));
    op = await operator([ns], {
      translate: defaultOptions({ activator: { namespace: ns, podLabels: { app: 'act' }, port: 8012 } }),
      activatorService: { namespace: ns, name: 'act' },
      activatorKey: ACTIVATOR_KEY,
      idle: {
        timeoutMs: 2000,
        tickMs: 200,
        metricsUrl: (pod) => (isKeyed(pod) ? `http://127.0.0.1:${metricsPort}/metrics` : undefined),
        cardUrl: (pod) => (isKeyed(pod) ? new URL('/.well-known/agent-card.json', served!.url).href : undefined),
      },
    });
    await eventually('operator ready', () => op!.ready());
  });
  afterAll(async () => {
    await op?.stop();
    await deleteNamespace(ns);
  });

  it('sleeps, and its status holds the digests of its Secret’s keys; the operator keeps no key in clear', async () => {
    const yaml =
      'apiVersion: murmur.io/v1alpha1\nkind: Capsule\nmetadata: { name: keyed }\nspec:\n  replicas: 1\n  sleep: { afterIdle: 10s }\n' +
      "  store: { postgres: { urlSecretRef: { name: store, key: url }, address: '10.20.0.5:5432' } }\n" +
      '  a2a: { auth: { apiKeys: { secretName: keyed-keys } } }\n' +
      '  artifacts: [{ name: drv, runtime: driver, version: 1.0.0 }]\n' +
      "  inference: { driver: { artifact: drv }, model: claude-test, endpoint: 'https://api.anthropic.com' }\n";
    const r = await kubectl(['apply', '-n', ns, '-f', '-'], yaml);
    expect(r.code, r.stderr).toBe(0);
    const asleep = await eventually(
      'keyed Sleeping',
      async () => {
        // The move is written first (phase, since, card), the conditions by the same reconcile right after.
        const c = await get();
        return c?.status?.phase === 'Sleeping' && c.status.conditions?.some((x) => x.type === 'Sleeping' && x.status === 'True') ? c : undefined;
      },
      90_000,
    );
    expect(asleep!.status!.sleep!.apiKeyDigests).toEqual(digestsOf([KEY_CI, KEY_OPS]));
    expect(asleep!.status!.conditions!.find((c) => c.type === 'Sleeping')).toMatchObject({ status: 'True', reason: 'Idle' });
    await eventually('keyed replicas 0', async () => (await replicas()) === 0);
    // The Secret as the operator caches it: names and digests, no value.
    const cached = JSON.stringify(op!.controller()!.secrets.get(`${ns}/keyed-keys`));
    expect(cached).toContain('apiKeyDigests');
    for (const v of [KEY_CI, KEY_OPS, Buffer.from(KEY_CI).toString('base64').slice(0, 20)]) expect(cached).not.toContain(v);
    expect(cached).not.toContain('"data"');
  }, 120_000);

  it('a Secret rotation while asleep replaces the digests, and does not wake it', async () => {
    const live = await client.get<KubeObject>(`/api/v1/namespaces/${ns}/secrets/keyed-keys`);
    await client.replace(secret({ 'ci-bot': KEY_NEW, ops: KEY_OPS }, live!.metadata.resourceVersion));
    const c = await eventually('the digests follow the Secret', async () => {
      const x = await get();
      return JSON.stringify(x?.status?.sleep?.apiKeyDigests) === JSON.stringify(digestsOf([KEY_NEW, KEY_OPS])) ? x : undefined;
    });
    expect(c!.status!.phase).toBe('Sleeping');
    expect(await replicas()).toBe(0);
    // A deleted Secret leaves no key that wakes it.
    await client.delete({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'keyed-keys', namespace: ns } });
    await eventually('no digests without the Secret', async () => (await get())?.status?.sleep?.apiKeyDigests?.length === 0);
  });
});
