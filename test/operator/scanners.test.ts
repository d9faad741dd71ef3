/**
 * Third-party checkers on what a platform team deploys (issue 38 §6): kube-score (its default
 * checks) and checkov (its Kubernetes checks) on the chart as `helm template` renders it with its
 * default values, and on the objects the operator renders for the examples, plus the quickstart at
 * three replicas on the shared store (so the PodDisruptionBudget path is checked too). Every
 * finding is fixed or in ACCEPTED below with the reason docs/operator.md gives ("What the
 * checkers say"): a finding not accepted fails, and so does an accepted one no longer raised.
 *
 * The checkers are built by test/operator/scanners/build-*.sh when missing (kube-score from the Go
 * module proxy, checkov from PyPI into a venv; .ci/run does it as timed steps first).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { Capsule, KubeObject } from '../../operator/api/types.ts';
import { helm, repoRoot } from './helpers.ts';
import { exampleDocs, renderCapsules, toYaml } from './scanners/render.ts';

const run = promisify(execFile);
const SCANNERS = process.env.SCANNERS_DIR ?? join(repoRoot, '.cache', 'scanners');
const KUBE_SCORE = join(SCANNERS, 'bin', 'kube-score');
const CHECKOV = join(SCANNERS, 'checkov', 'bin', 'checkov');
const NS = 'agents';

/** Capsule objects: the Deployment of every capsule of the examples (one replica each, and `assistant-ha`). */
const CAPSULES = ['assistant', 'assistant-ha', 'researcher', 'writer'].map((n) => `Deployment/${n}`);
/** The operator's and the activator's Deployments (one image, the same findings for the same reasons). */
const OPERATOR = ['Deployment/capsule-operator', 'Deployment/capsule-operator-activator'];

/** Findings kept on purpose: tool, check, objects. The reasons are in docs/operator.md, under each check id. */
const ACCEPTED: Array<{ tool: 'kube-score' | 'checkov'; check: string; objects: string[] }> = [
  { tool: 'kube-score', check: 'container-resources', objects: [...CAPSULES, ...OPERATOR] }, // no CPU limit
  { tool: 'kube-score', check: 'container-image-pull-policy', objects: [...CAPSULES, ...OPERATOR] },
  { tool: 'kube-score', check: 'deployment-replicas', objects: ['Deployment/assistant', 'Deployment/researcher', 'Deployment/writer', ...OPERATOR] },
  { tool: 'kube-score', check: 'deployment-has-host-podantiaffinity', objects: ['Deployment/assistant-ha'] },
  { tool: 'checkov', check: 'CKV_K8S_11', objects: [...CAPSULES, ...OPERATOR] }, // CPU limits
  { tool: 'checkov', check: 'CKV_K8S_15', objects: [...CAPSULES, ...OPERATOR] }, // pull policy Always
  { tool: 'checkov', check: 'CKV_K8S_43', objects: [...CAPSULES, ...OPERATOR] }, // image by digest
  { tool: 'checkov', check: 'CKV_K8S_35', objects: CAPSULES }, // Secrets as env vars
  { tool: 'checkov', check: 'CKV_K8S_38', objects: OPERATOR }, // ServiceAccount token mounted
  {
    tool: 'checkov',
    check: 'CKV_K8S_21',
    objects: ['Role/capsule-operator', 'RoleBinding/capsule-operator', 'Role/capsule-operator-activator', 'RoleBinding/capsule-operator-activator'],
  }, // default namespace
];

let dir = '';
let files: string[] = [];

async function build(script: string): Promise<void> {
  const r = await run('bash', [join(repoRoot, 'test', 'operator', 'scanners', script)], { maxBuffer: 64 << 20 }).catch((e) => e);
  if (r.code) throw new Error(`${script} failed (exit ${r.code}): ${String(r.stderr).slice(-4000)}`);
}

beforeAll(async () => {
  // Sequential: both are CPU-bound and the machine is shared.
  await build('build-kube-score.sh');
  await build('build-checkov.sh');
  dir = mkdtempSync(join(tmpdir(), 'scanners-'));
  const chart = await helm(['template', 'capsule-operator', join(repoRoot, 'charts', 'capsule-operator'), '-n', 'capsule-system']);
  if (chart.code !== 0) throw new Error(`helm template failed: ${chart.stderr}`);
  const docs = exampleDocs(join(repoRoot, 'examples', 'k8s'), NS);
  // The quickstart at three replicas on the shared store: the path with a PodDisruptionBudget.
  const quick = docs.find((d) => d.kind === 'Capsule' && d.metadata.name === 'assistant') as Capsule;
  const ha: Capsule = {
    ...quick,
    metadata: { ...quick.metadata, name: 'assistant-ha', uid: 'uid-assistant-ha' },
    spec: { ...quick.spec, replicas: 3, store: { postgres: { urlSecretRef: { name: 'store', key: 'url' }, address: '10.20.0.5:5432' } } },
  };
  const store = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'store', namespace: NS }, stringData: { url: 'postgresql://x@10.20.0.5/db' } };
  files = [join(dir, 'chart.yaml'), join(dir, 'capsules.yaml')];
  writeFileSync(files[0]!, chart.stdout);
  writeFileSync(files[1]!, toYaml(renderCapsules([...docs, ha, store], NS)));
}, 1_800_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const expected = (tool: string) =>
  ACCEPTED.filter((a) => a.tool === tool)
    .flatMap((a) => a.objects.map((o) => `${a.check} ${o}`))
    .sort();

describe('third-party checkers', () => {
  it('renders what it checks: the chart (operator Deployment, RBAC, its NetworkPolicy) and every capsule of the examples, with a PodDisruptionBudget for the replicated one', () => {
    const kinds = (f: string) =>
      parseAllDocuments(readFileSync(f, 'utf8'))
        .map((d) => d.toJS() as KubeObject)
        .filter(Boolean)
        .map((d) => `${d.kind}/${d.metadata.name}`);
    expect(kinds(files[0]!)).toEqual(expect.arrayContaining(['Deployment/capsule-operator', 'NetworkPolicy/capsule-operator', 'Role/capsule-operator']));
    const capsules = kinds(files[1]!);
    expect(capsules.filter((k) => k.startsWith('Deployment/')).sort()).toEqual(CAPSULES);
    expect(capsules.filter((k) => k.startsWith('PodDisruptionBudget/'))).toEqual(['PodDisruptionBudget/assistant-ha']);
  });

  it('kube-score: every finding on the chart and the rendered capsules is fixed or accepted with a reason', async () => {
    // Exit 1 when it found something critical: the JSON says what.
    const r = await run(KUBE_SCORE, ['score', '-o', 'json', ...files], { maxBuffer: 64 << 20 }).catch((e) => e);
    const objects = JSON.parse(r.stdout) as Array<{
      type_meta: { kind: string };
      object_meta: { name: string };
      checks: Array<{ check: { id: string }; grade: number; skipped: boolean; comments: Array<{ summary: string }> | null }>;
    }>;
    // kube-score scores the kinds it has checks for: every Deployment, NetworkPolicy, Service and PodDisruptionBudget here.
    const scored = objects.map((o) => `${o.type_meta.kind}/${o.object_meta.name}`);
    expect(scored).toEqual(
      expect.arrayContaining([
        ...CAPSULES,
        ...OPERATOR,
        'NetworkPolicy/capsule-operator',
        'NetworkPolicy/assistant-ha-egress',
        'PodDisruptionBudget/assistant-ha',
        'Service/assistant-ha',
      ]),
    );
    const found = objects
      .flatMap((o) => o.checks.filter((c) => !c.skipped && c.grade < 10).map((c) => `${c.check.id} ${o.type_meta.kind}/${o.object_meta.name}`))
      .sort();
    expect(found).toEqual(expected('kube-score'));
  });

  it('checkov: every finding on the chart and the rendered capsules is fixed or accepted with a reason', async () => {
    const r = await run(CHECKOV, [...files.flatMap((f) => ['-f', f]), '--framework', 'kubernetes', '-o', 'json', '--quiet', '--skip-download'], {
      maxBuffer: 64 << 20,
      cwd: dir,
    }).catch((e) => e);
    const out = JSON.parse(r.stdout);
    const reports = (Array.isArray(out) ? out : [out]) as Array<{
      summary: { passed: number; parsing_errors: number };
      results: { failed_checks: Array<{ check_id: string; resource: string }> };
    }>;
    expect(reports.reduce((n, x) => n + x.summary.passed, 0)).toBeGreaterThan(100);
    expect(reports.reduce((n, x) => n + x.summary.parsing_errors, 0)).toBe(0);
    // resource: Kind.namespace.name
    const found = reports
      .flatMap((x) => x.results.failed_checks.map((f) => `${f.check_id} ${f.resource.split('.')[0]}/${f.resource.split('.').slice(2).join('.')}`))
      .sort();
    expect(found).toEqual(expected('checkov'));
  });

  it('docs/operator.md gives the reason for every accepted finding', () => {
    const doc = readFileSync(join(repoRoot, 'docs', 'operator.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### What the checkers say'));
    for (const a of ACCEPTED) expect(section, a.check).toContain(`\`${a.check}\``);
  });
});
