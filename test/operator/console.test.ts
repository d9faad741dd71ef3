/**
 * `mur console` on the real API server, in a real headless Chromium: the page lists the Capsules
 * with readiness, replicas, model, tokens against the session ceiling, and a Capsule's conditions
 * and recent events; a viewer whose RBAC reads namespace A but not B sees nothing of B — not in
 * the page, not through the API. Chat and timeline against a running capsule are in
 * test/console/console.test.ts (mur serve) and test/realnode/console.test.ts (a real pod).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import type { Browser } from 'playwright-core';
import { openConsole } from '../../runtime/cli/console.ts';
import type { RunningConsole } from '../../runtime/console/server.ts';
import { tmp } from '../registry/helpers.ts';
import { CHROMIUM_INSTALL_TIMEOUT_MS, launchBrowser, screenshot } from '../support/browser.ts';
import { deleteNamespace, ensureCrds, kubeconfig, kubectlOk, newNamespace } from './helpers.ts';

let browser: Browser;
let nsA: string;
let nsB: string;
let viewerConfig: string;
let narrowConfig: string;
const consoles: RunningConsole[] = [];

function capsule(ns: string, name: string, model: string): string {
  return JSON.stringify({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: ns },
    spec: {
      version: '1.0.0',
      replicas: 1,
      artifacts: [{ name: 'driver-anthropic', version: '0.1.0', runtime: 'driver' }],
      inference: { driver: { artifact: 'driver-anthropic' }, model, endpoint: 'https://api.anthropic.com', max_session_tokens: 50000 },
    },
  });
}

async function setStatus(
  ns: string,
  name: string,
  ready: 'True' | 'False',
  reason: string,
  message: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const now = new Date().toISOString();
  const status = {
    conditions: [
      { type: 'Ready', status: ready, reason, message, lastTransitionTime: now },
      { type: 'ConfigValid', status: 'True', reason: 'Valid', message: 'murmur.yaml validates', lastTransitionTime: now },
    ],
    ...extra,
  };
  await kubectlOk(['patch', 'capsule', name, '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
}

async function event(ns: string, capsuleName: string, name: string, type: string, reason: string, message: string): Promise<void> {
  const now = new Date().toISOString();
  await kubectlOk(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: ns },
      involvedObject: { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', name: capsuleName, namespace: ns },
      type,
      reason,
      message,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: 'capsule-operator' },
    }),
  );
}

/** A raw API call to a console, with the Host and token the page would send. */
function api(c: RunningConsole, path: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: c.port, path, headers: { host: `127.0.0.1:${c.port}`, 'x-mur-console-token': c.token } }, (res) => {
      let s = '';
      res.on('data', (d: Buffer) => (s += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(s) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A kubeconfig whose user is ServiceAccount `sa` of namespace A (its token), context namespace A. */
async function kubeconfigOf(sa: string): Promise<string> {
  const token = (await kubectlOk(['create', 'token', sa, '-n', nsA])).trim();
  const admin = new KubeConfig();
  admin.loadFromFile(kubeconfig);
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: sa, token }],
    contexts: [{ name: sa, cluster: cluster.name, user: sa, namespace: nsA }],
    currentContext: sa,
  });
  const file = join(tmp('console-kc-'), 'kubeconfig');
  writeFileSync(file, kc.exportConfig());
  return file;
}

async function startFor(config: string): Promise<RunningConsole> {
  const c = (await openConsole(
    ['--kubeconfig', config],
    () => {},
    () => {},
  ))!;
  consoles.push(c);
  return c;
}

beforeAll(async () => {
  browser = await launchBrowser();
}, CHROMIUM_INSTALL_TIMEOUT_MS);

beforeAll(async () => {
  await ensureCrds();
  nsA = await newNamespace('console-a');
  nsB = await newNamespace('console-b');
  await kubectlOk(['apply', '-f', '-'], capsule(nsA, 'alpha', 'claude-alpha'));
  await kubectlOk(['apply', '-f', '-'], capsule(nsA, 'beta', 'claude-beta'));
  await kubectlOk(['apply', '-f', '-'], capsule(nsB, 'bravo', 'model-only-in-b'));
  const usage = { inputTokens: 1200, outputTokens: 345, totalTokens: 1545, observedAt: new Date().toISOString(), pods: 1 };
  await setStatus(nsA, 'alpha', 'True', 'Available', '1/1 replicas ready', {
    replicas: 1,
    readyReplicas: 1,
    a2aUrl: `http://alpha.${nsA}.svc.cluster.local:8080`,
    usage,
  });
  await setStatus(nsA, 'beta', 'False', 'RollingOut', '0/1 replicas ready', { replicas: 1, readyReplicas: 0 });
  await setStatus(nsB, 'bravo', 'False', 'SecretMissing', 'secret bravo-key-in-b not found', { replicas: 1, readyReplicas: 0 });
  await event(nsA, 'alpha', 'alpha.1', 'Normal', 'Reconciled', 'Deployment alpha rolled out');
  await event(nsA, 'alpha', 'alpha.2', 'Warning', 'UsageScrape', 'pod alpha-1 /metrics timed out');
  await event(nsB, 'bravo', 'bravo.1', 'Warning', 'SecretMissing', 'bravo-key-in-b is missing');

  // Two viewers that read Capsules and events in A only, nothing cluster-wide of Capsules:
  // `viewer` may list namespaces (so the console tries each and B refuses), `narrow` may not.
  await kubectlOk(['create', 'role', 'capsule-viewer', '-n', nsA, '--verb=get,list', '--resource=capsules.murmur.io,events']);
  await kubectlOk(['create', 'clusterrole', `${nsA}-ns-lister`, '--verb=list', '--resource=namespaces']);
  for (const sa of ['viewer', 'narrow']) {
    await kubectlOk(['create', 'serviceaccount', sa, '-n', nsA]);
    await kubectlOk(['create', 'rolebinding', `${sa}-views`, '-n', nsA, '--role=capsule-viewer', `--serviceaccount=${nsA}:${sa}`]);
  }
  await kubectlOk(['create', 'clusterrolebinding', `${nsA}-ns-lister`, `--clusterrole=${nsA}-ns-lister`, `--serviceaccount=${nsA}:viewer`]);
  viewerConfig = await kubeconfigOf('viewer');
  narrowConfig = await kubeconfigOf('narrow');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const c of consoles) await c.close();
  if (nsA) {
    await kubectlOk(['delete', 'clusterrolebinding,clusterrole', `${nsA}-ns-lister`, '--ignore-not-found']).catch(() => {});
    await deleteNamespace(nsA);
  }
  if (nsB) await deleteNamespace(nsB);
});

describe('mur console on a real API server', () => {
  it('lists every Capsule with readiness, replicas, model, tokens and ceiling; a Capsule shows its conditions and recent events', async () => {
    const c = await startFor(kubeconfig);
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(c.url);
    await page.locator('body[data-loaded="capsules"]').waitFor();
    const row = (ns: string, name: string) => page.locator(`tr[data-ref="capsule:${ns}/${name}"] td`).allTextContents();
    expect(await row(nsA, 'alpha')).toEqual([`${nsA}/alpha`, 'True (Available)', '1/1', 'claude-alpha', '1,545 (in 1,200, out 345)', '50,000 tokens']);
    expect(await row(nsA, 'beta')).toEqual([`${nsA}/beta`, 'False (RollingOut)', '0/1', 'claude-beta', '—', '50,000 tokens']);
    expect(await row(nsB, 'bravo')).toEqual([`${nsB}/bravo`, 'False (SecretMissing)', '0/1', 'model-only-in-b', '—', '50,000 tokens']);
    await screenshot(page, 'capsules');

    await page.getByRole('button', { name: `${nsA}/alpha` }).click();
    await page.locator('body[data-loaded="detail"]').waitFor();
    expect(await page.locator('#detail-h').textContent()).toBe(`Capsule ${nsA}/alpha`);
    const conditions = await page
      .locator('#conditions tbody tr')
      .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    expect(conditions).toEqual([
      ['Ready', 'True', 'Available', '1/1 replicas ready'],
      ['ConfigValid', 'True', 'Valid', 'murmur.yaml validates'],
    ]);
    const events = await page.locator('#events li').allTextContents();
    expect(events).toHaveLength(2);
    expect(events.some((e) => e.startsWith('UsageScrape pod alpha-1 /metrics timed out ×1'))).toBe(true);
    expect(events.some((e) => e.startsWith('Reconciled Deployment alpha rolled out ×1'))).toBe(true);
    await screenshot(page, 'capsule-detail');
    await page.close();
  });

  it('a viewer whose RBAC reads namespace A but not B sees nothing of B, in the page or through the API', async () => {
    const c = await startFor(viewerConfig);
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(c.url);
    await page.locator('body[data-loaded="capsules"]').waitFor();
    const refs = await page.locator('#capsule-table tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-ref')));
    expect(refs).toEqual([`capsule:${nsA}/alpha`, `capsule:${nsA}/beta`]);
    const note = (await page.locator('#capsules-note').textContent())!;
    expect(note).toContain('listed namespace by namespace');
    expect(note).toMatch(new RegExp(`not shown, your RBAC refuses: .*\\b${nsB}\\b`));
    const text = (await page.locator('body').textContent())!;
    for (const secret of ['bravo', 'model-only-in-b', 'SecretMissing']) expect(text).not.toContain(secret);
    await screenshot(page, 'viewer-capsules');

    // The API answers the viewer as the API server does: B's Capsule, events and tasks are refused.
    const all = await api(c, '/api/agents');
    expect(all.status).toBe(200);
    expect(JSON.stringify(all.body.capsules)).not.toContain(nsB);
    const one = await api(c, `/api/capsule?namespace=${nsB}&name=bravo`);
    expect(one).toEqual({ status: 404, body: { error: `Capsule ${nsB}/bravo is not there or your RBAC does not let you read it`, code: 'E-CLI-035' } });
    const tasks = await api(c, `/api/tasks?agent=${encodeURIComponent(`capsule:${nsB}/bravo`)}`);
    expect(tasks.status).toBe(502);
    expect(tasks.body).toMatchObject({ code: 'E-CLI-037', error: `the cluster refused to let you read Capsule ${nsB}/bravo (HTTP 403)` });
    await page.close();
  });

  it('a viewer who may not list namespaces sees the Capsules of its context’s namespace only', async () => {
    const c = await startFor(narrowConfig);
    const r = await api(c, '/api/agents');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ scope: 'namespaces', refused: [] });
    expect(r.body.capsules.map((x: { ref: string }) => x.ref)).toEqual([`capsule:${nsA}/alpha`, `capsule:${nsA}/beta`]);
  });
});
