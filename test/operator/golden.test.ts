/**
 * Golden tests of the pure translate function: golden/<case>.input.yaml (the Capsule first, then
 * any Hooks, Secrets, other Capsules, an optional TranslateOptions document and an optional
 * SleepState document, the controller's observed sleep state: TranslateInput.sleep) →
 * golden/<case>.output.yaml (the desired objects, then a TranslateSummary). UPDATE_GOLDEN=1
 * rewrites the outputs.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import type { Capsule, Hook, SecretInfo, ServiceInfo } from '../../operator/api/types.ts';
import { serviceInfo } from '../../operator/translate/mcp.ts';
import { peerKeys } from '../../operator/translate/network.ts';
import { translate, type SleepInput } from '../../operator/translate/index.ts';
import { parseManifest } from '../../runtime/manifest/capsule.ts';
import { defaultOptions, type TranslateOptions } from '../../operator/translate/options.ts';

const DIR = join(import.meta.dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

export function goldenInput(text: string) {
  const docs = parseAllDocuments(text).map((d) => d.toJS() as Record<string, any>);
  const capsules = docs.filter((d) => d.kind === 'Capsule') as Capsule[];
  const capsule = capsules[0]!;
  const ns = capsule.metadata.namespace ?? 'default';
  const hooks: Record<string, Hook> = {};
  for (const d of docs) if (d.kind === 'Hook' && (d.metadata.namespace ?? 'default') === ns) hooks[d.metadata.name] = d as Hook;
  const secrets: Record<string, SecretInfo> = {};
  for (const d of docs)
    if (d.kind === 'Secret' && (d.metadata.namespace ?? 'default') === ns)
      secrets[d.metadata.name] = {
        name: d.metadata.name,
        resourceVersion: String(d.metadata.resourceVersion ?? '1'),
        keys: Object.keys({ ...d.data, ...d.stringData }).sort(),
      };
  // Services (any namespace): the ones spec.mcp.servers[].service names, as the controller keeps them.
  const services: Record<string, ServiceInfo> = {};
  for (const d of docs)
    if (d.kind === 'Service') services[`${d.metadata.namespace ?? 'default'}/${d.metadata.name}`] = serviceInfo(d as Parameters<typeof serviceInfo>[0]);
  const capsulePorts: Record<string, number> = {};
  for (const c of capsules) capsulePorts[`${c.metadata.namespace ?? 'default'}/${c.metadata.name}`] = c.spec.servicePort ?? 8080;
  const opt = docs.find((d) => d.kind === 'TranslateOptions');
  const options: TranslateOptions = defaultOptions(opt?.spec ?? {});
  const self = `${ns}/${capsule.metadata.name}`;
  const callers = capsules
    .slice(1)
    .filter((c) => peerKeys(c.metadata.namespace ?? 'default', c.spec, options.clusterDomain, () => true).includes(self))
    .map((c) => `${c.metadata.namespace ?? 'default'}/${c.metadata.name}`);
  const sleep = docs.find((d) => d.kind === 'SleepState')?.spec as SleepInput | undefined;
  return { capsule, hooks, secrets, callers, capsulePorts, services, options, ...(sleep ? { sleep } : {}) };
}

function render(input: ReturnType<typeof goldenInput>): string {
  const r = translate(input);
  const docs = [
    ...r.objects,
    {
      kind: 'TranslateSummary',
      a2aUrl: r.a2aUrl,
      configHash: r.configHash,
      problems: r.problems,
      sleep: { afterIdleSeconds: r.sleep.afterIdleSeconds, reason: r.sleep.reason },
    },
  ];
  return docs.map((d) => stringify(d, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n');
}

const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.input.yaml'))
  .sort();

describe('translate golden files', () => {
  it('has cases', () => expect(cases.length).toBeGreaterThan(3));
  for (const f of cases) {
    it(f.replace('.input.yaml', ''), () => {
      const got = render(goldenInput(readFileSync(join(DIR, f), 'utf8')));
      const out = join(DIR, f.replace('.input.yaml', '.output.yaml'));
      if (UPDATE) writeFileSync(out, got);
      expect(got).toBe(readFileSync(out, 'utf8'));
      // The rendered murmur.yaml is a manifest the runtime accepts (unknown keys are errors there).
      const r = translate(goldenInput(readFileSync(join(DIR, f), 'utf8')));
      if (!r.problems.some((p) => p.fatal)) {
        const cm = r.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> };
        expect(() => parseManifest(cm.data['murmur.yaml']!, f)).not.toThrow();
      }
    });
  }

  it('is pure: same input, same output', () => {
    const text = readFileSync(join(DIR, cases[0]!), 'utf8');
    expect(render(goldenInput(text))).toBe(render(goldenInput(text)));
  });
});
