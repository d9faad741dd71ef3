/**
 * `mur send capsule/<name>` on the real API server, with the user's own kubeconfig: no such
 * Capsule, a Capsule not Ready, a token the user's RBAC refuses, a ServiceAccount that is not
 * there, the token's audience (the capsule's URL, which the capsule's TokenReview accepts), and the
 * Service with no ready pod to forward to. The port-forward to a real pod is in
 * test/realnode/mur-client.test.ts (it needs a kubelet).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { decodeJwt } from 'jose';
import { main } from '../../runtime/cli/main.ts';
import { capsuleToken, resolveCapsule } from '../../runtime/client/capsule-target.ts';
import { tokenReviewVerifier } from '../../runtime/a2a/server/token-review.ts';
import { tmp } from '../registry/helpers.ts';
import { deleteNamespace, ensureCrds, kubeconfig, kubectlOk, newNamespace } from './helpers.ts';

let ns: string;
let viewerConfig: string;
const URL_OF = (name: string) => `http://${name}.${ns}.svc.cluster.local:8080`;

async function mur(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    args,
    (s) => out.push(s),
    (s) => err.push(s),
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function capsule(name: string): string {
  return JSON.stringify({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: ns },
    spec: {
      version: '1.0.0',
      artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
      inference: { driver: { artifact: 'driver-anthropic' }, model: 'claude-test', endpoint: 'https://api.anthropic.com' },
    },
  });
}

async function setStatus(name: string, ready: 'True' | 'False', reason: string, message: string, a2aUrl?: string): Promise<void> {
  const status = {
    conditions: [{ type: 'Ready', status: ready, reason, message, lastTransitionTime: new Date().toISOString() }],
    ...(a2aUrl ? { a2aUrl } : {}),
  };
  await kubectlOk(['patch', 'capsule', name, '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
}

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('mur-client');
  for (const n of ['absent-status', 'rolling', 'ready']) await kubectlOk(['apply', '-f', '-'], capsule(n));
  await setStatus('rolling', 'False', 'RollingOut', '0/1 replicas ready');
  await setStatus('ready', 'True', 'Available', '1/1 replicas ready', URL_OF('ready'));
  await kubectlOk(['create', 'serviceaccount', 'caller', '-n', ns]);
  // The user: may read Capsules in the namespace, and nothing else (no serviceaccounts/token).
  await kubectlOk(['create', 'serviceaccount', 'viewer', '-n', ns]);
  await kubectlOk(['create', 'role', 'capsule-reader', '-n', ns, '--verb=get', '--resource=capsules.murmur.io']);
  await kubectlOk(['create', 'rolebinding', 'viewer-reads', '-n', ns, '--role=capsule-reader', `--serviceaccount=${ns}:viewer`]);
  const token = (await kubectlOk(['create', 'token', 'viewer', '-n', ns])).trim();
  const admin = new KubeConfig();
  admin.loadFromFile(kubeconfig);
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  // The context names the namespace: `capsule/<name>` without -n takes it, as kubectl does.
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'viewer', token }],
    contexts: [{ name: 'viewer', cluster: cluster.name, user: 'viewer', namespace: ns }],
    currentContext: 'viewer',
  });
  viewerConfig = join(tmp('mur-client-kc-'), 'kubeconfig');
  writeFileSync(viewerConfig, kc.exportConfig());
}, 120_000);

afterAll(async () => {
  if (ns) await deleteNamespace(ns);
});

describe('mur send capsule/<name> on a real API server', () => {
  it('no such Capsule: E-CLI-035, naming the namespace', async () => {
    const r = await mur(['send', 'capsule/nowhere', '-n', ns, 'hi', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no Capsule 'nowhere' in namespace '${ns}' [E-CLI-035]`);
  });

  it('a Capsule not Ready: E-CLI-036 with its condition’s reason and message', async () => {
    const none = await mur(['send', 'capsule/absent-status', '-n', ns, 'hi', '--kubeconfig', kubeconfig]);
    expect(none.err).toContain(`Capsule ${ns}/absent-status is not Ready (no Ready condition yet) [E-CLI-036]`);
    const rolling = await mur(['send', `capsules.murmur.io/rolling`, `--namespace=${ns}`, 'hi', '--kubeconfig', kubeconfig]);
    expect(rolling.code).toBe(1);
    expect(rolling.err).toContain(`Capsule ${ns}/rolling is not Ready (RollingOut: 0/1 replicas ready) [E-CLI-036]`);
  });

  it('a token the user’s RBAC does not allow: E-CLI-037, saying which permission', async () => {
    // The viewer reads the Capsule (namespace from its context) but may not create tokens.
    const r = await mur(['send', 'capsule/ready', 'hi', '--kubeconfig', viewerConfig, '--service-account', 'caller']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`the cluster refused a token of ServiceAccount ${ns}/caller for ${URL_OF('ready')}/ (HTTP 403) [E-CLI-037]`);
    expect(r.err).toContain('create on serviceaccounts/token');
    // Nor may it read Capsules elsewhere.
    const other = await mur(['send', 'capsule/ready', '-n', 'default', 'hi', '--kubeconfig', viewerConfig]);
    expect(other.err).toMatch(/refused to let you read Capsule default\/ready \(HTTP 403\) \[E-CLI-037\]/);
  });

  it('a ServiceAccount that is not there: E-CLI-037', async () => {
    const r = await mur(['send', 'capsule/ready', '-n', ns, 'hi', '--kubeconfig', kubeconfig, '--service-account', 'ghost']);
    expect(r.err).toContain(`no ServiceAccount 'ghost' in namespace '${ns}' to get a token of [E-CLI-037]`);
  });

  it('the token is the ServiceAccount’s, for the capsule’s URL, and a TokenReview for that audience accepts it', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const c = await resolveCapsule(kc, 'ready', ns);
    expect(c.audience).toBe(`${URL_OF('ready')}/`);
    const token = await capsuleToken(kc, c, 'caller');
    const claims = decodeJwt(token);
    expect(claims.aud).toEqual([`${URL_OF('ready')}/`]);
    expect(claims.sub).toBe(`system:serviceaccount:${ns}:caller`);
    // What the capsule runs (mur serve --token-review, its --public-url as audience).
    const verify = tokenReviewVerifier({ audience: c.audience, kubeConfig: kc, cacheMs: 0 });
    expect(await verify.verify(token)).toEqual({ username: `system:serviceaccount:${ns}:caller` });
    // The same token for another capsule's URL is refused.
    const other = tokenReviewVerifier({ audience: `${URL_OF('other')}/`, kubeConfig: kc, cacheMs: 0 });
    expect(await other.verify(token)).toBeUndefined();
  });

  it('a Ready Capsule whose Service is missing or has no ready pod: E-CLI-038, after the token was granted', async () => {
    const missing = await mur(['send', 'capsule/ready', '-n', ns, 'hi', '--kubeconfig', kubeconfig, '--service-account', 'caller']);
    expect(missing.err).toContain(`cannot find the pods of Service ${ns}/ready (HTTP 404): services "ready" not found [E-CLI-038]`);
    await kubectlOk(['create', 'service', 'clusterip', 'ready', '-n', ns, '--tcp=8080:8080']);
    const r = await mur(['send', 'capsule/ready', '-n', ns, 'hi', '--kubeconfig', kubeconfig, '--service-account', 'caller']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no ready pod behind Service ${ns}/ready (0 pod(s)) [E-CLI-038]`);
  });

  it('a pod the API server cannot forward to (a simulated node): E-CLI-032 naming the Capsule and the pod', async () => {
    await kubectlOk(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'ready-0', namespace: ns, labels: { app: 'ready' } },
        spec: { containers: [{ name: 'runtime', image: 'capsule-runtime:test', ports: [{ name: 'a2a', containerPort: 8080 }] }] },
      }),
    );
    await kubectlOk(['wait', '-n', ns, '--for=condition=Ready', 'pod/ready-0', '--timeout=60s']);
    const r = await mur(['send', 'capsule/ready', '-n', ns, 'hi', '--kubeconfig', kubeconfig, '--service-account', 'caller']);
    expect(r.code, r.err).toBe(1);
    // The API server's reason is kept: a simulated node has no kubelet to forward through.
    expect(r.err).toMatch(
      new RegExp(
        `capsule/ready \\(${ns}\\) through the port-forward to pod ready-0 unreachable while reading its agent card: .*\\(port-forward: .+\\) \\[E-CLI-032\\]`,
      ),
    );
  });

  it('a kubeconfig that is not there, or a context it lacks: E-CLI-039', async () => {
    expect((await mur(['send', 'capsule/ready', 'hi', '--kubeconfig', '/nonexistent/kubeconfig'])).err).toMatch(
      /cannot load the kubeconfig \(\/nonexistent\/kubeconfig\).*\[E-CLI-039\]/,
    );
    expect((await mur(['tasks', 'capsule/ready', 'list', '--kubeconfig', viewerConfig, '--context', 'prod'])).err).toMatch(
      /has no context 'prod' \[E-CLI-039\]\n {2}hint: one of: viewer/,
    );
  });
});
