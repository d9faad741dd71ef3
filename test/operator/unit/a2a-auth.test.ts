/**
 * A2A authentication rendering (operator/translate/builders/a2a-auth.ts through translate()): the
 * runtime's flags per `spec.a2a.auth`, the API-key Secret checks, one projected token per peer with
 * the peer's own URL as audience, and the API server egress rule.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Capsule, SecretInfo } from '../../../operator/api/types.ts';
import { translate } from '../../../operator/translate/index.ts';
import { apiServerFromEnv } from '../../../operator/translate/api-server.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';
import { peerTokens } from '../../../runtime/a2a/peers/credentials.ts';

const capsule = (spec: Capsule['spec'], name = 'c', namespace = 'ns'): Capsule => ({
  apiVersion: 'murmur.io/v1alpha1',
  kind: 'Capsule',
  metadata: { name, namespace, uid: 'u1', generation: 1 },
  spec,
});
const run = (
  spec: Capsule['spec'],
  secrets: Record<string, SecretInfo> = {},
  more: { ports?: Record<string, number>; callers?: string[]; noTokens?: string[] } = {},
) =>
  translate({
    capsule: capsule(spec),
    hooks: {},
    secrets,
    callers: more.callers ?? [],
    capsulePorts: more.ports ?? {},
    noTokenPeers: new Set(more.noTokens ?? []),
    options: defaultOptions({ apiServer: [{ cidr: '10.0.0.1/32', port: 6443 }] }),
  });
const pod = (r: ReturnType<typeof run>) => (r.objects.find((o) => o.kind === 'Deployment') as any).spec.template.spec;
const args = (r: ReturnType<typeof run>): string[] => pod(r).containers[0].args;
const env = (r: ReturnType<typeof run>) =>
  Object.fromEntries(
    pod(r)
      .containers[0].env.filter((e: any) => 'value' in e)
      .map((e: any) => [e.name, e.value]),
  );
const egress = (r: ReturnType<typeof run>) => (r.objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-egress')) as any).spec.egress;
const KEYS = { 'api-keys': { name: 'api-keys', resourceVersion: '5', keys: ['ci-bot'] } };

describe('A2A authentication of capsule pods', () => {
  it('a Capsule that says nothing is authenticated: ServiceAccount tokens only, never --anonymous', () => {
    const r = run({});
    expect(args(r)).toContain('--token-review');
    expect(args(r)).not.toContain('--anonymous');
    expect(args(r)).not.toContain('--api-keys');
    // the pod's own API credentials for the TokenReview, where client-node's in-cluster config reads them
    expect(pod(r).containers[0].volumeMounts).toContainEqual({
      name: 'kube-api-access',
      mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      readOnly: true,
    });
    expect(pod(r).automountServiceAccountToken).toBe(false);
    expect(egress(r)).toContainEqual({ to: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: 6443 }] });
  });

  it('anonymous only where the Capsule says so; without ServiceAccount tokens no API credentials and no API server egress', () => {
    const r = run({ a2a: { auth: { anonymous: true, serviceAccounts: false } } });
    expect(args(r)).toContain('--anonymous');
    expect(args(r)).not.toContain('--token-review');
    expect(pod(r).volumes.map((v: any) => v.name)).not.toContain('kube-api-access');
    expect(JSON.stringify(egress(r))).not.toContain('10.0.0.1/32');
  });

  it('API keys: the Secret is mounted as a folder for --api-keys; missing or empty Secrets block the apply; rotation rolls the pods', () => {
    const r = run({ a2a: { auth: { apiKeys: { secretName: 'api-keys' } } } }, KEYS);
    expect(r.problems).toEqual([]);
    const i = args(r).indexOf('--api-keys');
    expect(args(r)[i + 1]).toBe('/var/run/secrets/murmur/a2a-api-keys');
    expect(pod(r).volumes).toContainEqual({ name: 'a2a-api-keys', secret: { secretName: 'api-keys', defaultMode: 0o400 } });
    const missing = run({ a2a: { auth: { apiKeys: { secretName: 'api-keys' } } } });
    expect(missing.problems).toEqual([expect.objectContaining({ reason: 'MissingSecret', fatal: true, field: 'spec.a2a.auth.apiKeys.secretName' })]);
    const empty = run({ a2a: { auth: { apiKeys: { secretName: 'api-keys' } } } }, { 'api-keys': { name: 'api-keys', resourceVersion: '1', keys: [] } });
    expect(empty.problems).toEqual([expect.objectContaining({ reason: 'MissingSecretKey', fatal: true })]);
    const rotated = run({ a2a: { auth: { apiKeys: { secretName: 'api-keys' } } } }, { 'api-keys': { ...KEYS['api-keys'], resourceVersion: '6' } });
    expect(rotated.configHash).not.toBe(r.configHash);
  });

  it('capsules that name this one are its trusted callers (their ServiceAccount usernames), plus trustedCallers', () => {
    const r = run({ a2a: { auth: { apiKeys: { secretName: 'api-keys' }, trustedCallers: ['apikey:ci-bot'] } } }, KEYS, { callers: ['other/b', 'ns/a'] });
    expect(env(r).MURMUR_A2A_TRUSTED_CALLERS).toBe('system:serviceaccount:ns:a,system:serviceaccount:other:b,apikey:ci-bot');
    expect(env(run({})).MURMUR_A2A_TRUSTED_CALLERS).toBeUndefined();
  });

  it("one projected token per peer: audience = the peer's --public-url, file = the host the runtime calls, which credentials.ts finds", () => {
    const r = run(
      { capabilities: { network: { allow: ['capsule://ns/b', 'http://d.other.svc:9000', 'api.example.com'] } } },
      {},
      { ports: { 'ns/b': 8080, 'other/d': 9000 } },
    );
    const vol = pod(r).volumes.find((v: any) => v.name === 'a2a-peer-tokens');
    expect(vol.projected.sources).toEqual([
      { serviceAccountToken: { audience: 'http://b.ns.svc.cluster.local:8080/', expirationSeconds: 3600, path: 'b.ns.svc.cluster.local' } },
      { serviceAccountToken: { audience: 'http://d.other.svc.cluster.local:9000/', expirationSeconds: 3600, path: 'd.other.svc' } },
    ]);
    expect(env(r).MURMUR_A2A_PEER_TOKENS_DIR).toBe('/var/run/secrets/murmur/peers');
    // The callee's own --public-url is the audience the caller's token carries.
    const callee = translate({
      capsule: capsule({ servicePort: 9000 }, 'd', 'other'),
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: {},
      options: defaultOptions(),
    });
    const calleeArgs = args(callee);
    expect(calleeArgs[calleeArgs.indexOf('--public-url') + 1]).toBe('http://d.other.svc.cluster.local:9000/');
    // The runtime's lookup resolves each peer URL the manifest names to exactly these file names.
    const manifest = String((r.objects.find((o) => o.kind === 'ConfigMap') as any).data['murmur.yaml']);
    const dir = mkdtempSync(join(tmpdir(), 'peer-tokens-'));
    for (const src of vol.projected.sources) writeFileSync(join(dir, src.serviceAccountToken.path), `token-for-${src.serviceAccountToken.audience}`);
    const lookup = peerTokens(dir);
    expect(manifest).toContain('http://b.ns.svc.cluster.local:8080');
    expect(lookup('http://b.ns.svc.cluster.local:8080')).toBe('token-for-http://b.ns.svc.cluster.local:8080/');
    expect(lookup('http://d.other.svc:9000')).toBe('token-for-http://d.other.svc.cluster.local:9000/');
    expect(run({}).objects.some((o: any) => JSON.stringify(o).includes('a2a-peer-tokens'))).toBe(false);
  });

  it('no token is projected for a peer that takes none (serviceAccounts: false): presenting one would be refused', () => {
    const r = run(
      { capabilities: { network: { allow: ['capsule://ns/b', 'capsule://ns/keys-only'] } } },
      {},
      { ports: { 'ns/b': 8080, 'ns/keys-only': 8080 }, noTokens: ['ns/keys-only'] },
    );
    const vol = pod(r).volumes.find((v: any) => v.name === 'a2a-peer-tokens');
    expect(vol.projected.sources.map((s: any) => s.serviceAccountToken.path)).toEqual(['b.ns.svc.cluster.local']);
  });

  it('the API server egress comes from API_SERVER_EGRESS plus the in-cluster Service address; a bad entry says what is expected', () => {
    expect(
      apiServerFromEnv({ API_SERVER_EGRESS: '10.201.0.2/32:6443, fd00::1/128:6443', KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }),
    ).toEqual([
      { cidr: '10.201.0.2/32', port: 6443 },
      { cidr: 'fd00::1/128', port: 6443 },
      { cidr: '10.96.0.1/32', port: 443 },
    ]);
    expect(() => apiServerFromEnv({ API_SERVER_EGRESS: '10.0.0.1/32' })).toThrow(/expected <cidr>:<port>/);
  });
});
