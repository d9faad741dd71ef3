/**
 * The objects the operator renders for the examples (examples/k8s/*.yaml), for the scanners
 * (scanners.test.ts): every Capsule through the pure translate with the Hooks, Secrets and peers
 * of the examples, in namespace `ns` (the examples name none: `kubectl apply -n <ns>`).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import type { Capsule, Hook, KubeObject, SecretInfo } from '../../../operator/api/types.ts';
import { peerKeys } from '../../../operator/translate/network.ts';
import { translate } from '../../../operator/translate/index.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';

/** The examples' documents, in namespace `ns`. */
export function exampleDocs(examplesDir: string, ns: string): KubeObject[] {
  return readdirSync(examplesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(examplesDir, f), 'utf8').replaceAll('capsule://default/', `capsule://${ns}/`)).map(
        (d) => d.toJS() as KubeObject | null,
      ),
    )
    .filter((d): d is KubeObject => !!d?.kind)
    .map((d): KubeObject => ({ ...d, metadata: { ...d.metadata, namespace: ns, uid: `uid-${d.metadata.name}` } }));
}

/** What the operator renders for every Capsule of `docs` (all in namespace `ns`), with the Hooks, Secrets and peers among them. */
export function renderCapsules(docs: KubeObject[], ns: string): KubeObject[] {
  const capsules = docs.filter((d) => d.kind === 'Capsule') as Capsule[];
  const hooks: Record<string, Hook> = Object.fromEntries(docs.filter((d) => d.kind === 'Hook').map((h) => [h.metadata.name, h as Hook]));
  const secrets: Record<string, SecretInfo> = Object.fromEntries(
    docs
      .filter((d) => d.kind === 'Secret')
      .map((s) => [
        s.metadata.name,
        { name: s.metadata.name, resourceVersion: '1', keys: Object.keys({ ...(s.data as object), ...(s.stringData as object) }).sort() },
      ]),
  );
  const options = defaultOptions();
  const capsulePorts = Object.fromEntries(capsules.map((c) => [`${ns}/${c.metadata.name}`, c.spec.servicePort ?? 8080]));
  return capsules.flatMap((capsule) => {
    const self = `${ns}/${capsule.metadata.name}`;
    const callers = capsules.filter((c) => peerKeys(ns, c.spec, options.clusterDomain, () => true).includes(self)).map((c) => `${ns}/${c.metadata.name}`);
    return translate({ capsule, hooks, secrets, callers, capsulePorts, options }).objects;
  });
}

export function toYaml(objects: readonly unknown[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n');
}
