/**
 * translate: a PURE function from a Capsule (+ its Hooks, the Secrets it names, the capsules that
 * name it and the known capsules' Service ports) to the objects that should exist, the problems
 * that stop it (missing Secret, missing Hook, invalid artifact…), the A2A URL and the config hash.
 * No API calls, no clock, no randomness: the reconciler applies what this returns.
 */
import { isIP } from 'node:net';
import type { Capsule, Hook, KubeObject, SecretInfo, ServiceInfo } from '../api/types.ts';
import { sha256, stableJson } from './builders/common.ts';
import { buildConfigMap } from './builders/configmap.ts';
import { buildDeployment } from './builders/deployment.ts';
import { buildDisruptionBudget } from './builders/disruption.ts';
import { renderManifest } from './builders/manifest.ts';
import { buildEgressPolicy, buildIngressPolicy } from './builders/networkpolicy.ts';
import { buildService } from './builders/service.ts';
import { buildServiceAccount } from './builders/serviceaccount.ts';
import { a2aAuth, apiServerEgress, authSettings, type PeerToken } from './builders/a2a-auth.ts';
import { isMurErrorList, parseManifest } from '../../runtime/manifest/index.ts';
import { allAllowEntries, allowEntriesWithField, parseAllow, type AllowEntry } from './network.ts';
import type { TranslateOptions } from './options.ts';
import { renderStore } from './store.ts';
import { renderMcp } from './mcp.ts';
import type { Problem } from './problems.ts';

export interface TranslateInput {
  capsule: Capsule;
  /** Hooks in the capsule's namespace by name (only those spec.hooks names are needed). */
  hooks: Record<string, Hook | undefined>;
  /** Secrets in the capsule's namespace by name (names, versions and keys only). */
  secrets: Record<string, SecretInfo | undefined>;
  /** `<ns>/<name>` of capsules whose allowlist names this one. */
  callers: string[];
  /** Service port of every known capsule, by `<ns>/<name>`. */
  capsulePorts: Record<string, number>;
  /** The Services spec.mcp.servers[].service names, by `<ns>/<name>` (translate/mcp.ts). */
  services?: Record<string, ServiceInfo | undefined>;
  /** `<ns>/<name>` of capsules that take no ServiceAccount tokens: a caller presenting one would get 401, so none is projected. */
  noTokenPeers?: ReadonlySet<string>;
  options: TranslateOptions;
  /** The runtime's validator on the rendered murmur.yaml (default `runtimeRefusals`; the controller passes a memo of it, reconcile/refusals-memo.ts). */
  refusals?: (murmurYaml: string, nArtifacts: number) => Problem[];
}

export { ADMISSION_CODES, PROBLEM_CODES, type Problem, type ProblemReason } from './problems.ts';

export interface TranslateResult {
  objects: KubeObject[];
  problems: Problem[];
  a2aUrl: string;
  configHash: string;
}

export function a2aUrl(namespace: string, name: string, port: number, domain: string): string {
  return `http://${name}.${namespace}.svc.${domain}:${port}`;
}

export function translate(input: TranslateInput): TranslateResult {
  const { capsule, options } = input;
  const ns = capsule.metadata.namespace ?? 'default';
  const spec = capsule.spec;
  const problems: Problem[] = [];

  // Secret holding the API key.
  const keyRef = spec.inference?.apiKeySecretRef;
  let secretVersion = '';
  if (keyRef) {
    const s = input.secrets[keyRef.name];
    if (!s) problems.push({ reason: 'MissingSecret', fatal: true, field: 'spec.inference.apiKeySecretRef', message: `Secret '${keyRef.name}' (inference.apiKeySecretRef) not found in namespace '${ns}'; create it with the provider API key under key '${keyRef.key}'` });
    else if (!s.keys.includes(keyRef.key)) problems.push({ reason: 'MissingSecretKey', fatal: true, field: 'spec.inference.apiKeySecretRef.key', message: `Secret '${keyRef.name}' has no key '${keyRef.key}' (keys: ${s.keys.join(', ') || 'none'})` });
    else secretVersion = s.resourceVersion;
  }

  // Secret holding the A2A API keys (one key per holder).
  const auth = authSettings(capsule);
  let apiKeysVersion: string | undefined;
  if (auth.apiKeys) {
    const name = auth.apiKeys.secretName;
    const s = input.secrets[name];
    if (!s) problems.push({ reason: 'MissingSecret', fatal: true, field: 'spec.a2a.auth.apiKeys.secretName', message: `Secret '${name}' (a2a.auth.apiKeys) not found in namespace '${ns}'; create it with one key per API key holder, e.g. kubectl create secret generic ${name} --from-literal=ci-bot=$(openssl rand -hex 32)` });
    else if (s.keys.length === 0) problems.push({ reason: 'MissingSecretKey', fatal: true, field: 'spec.a2a.auth.apiKeys.secretName', message: `Secret '${name}' (a2a.auth.apiKeys) has no keys; add one per API key holder (the key name is the holder, its value the API key)` });
    else apiKeysVersion = s.resourceVersion;
  }

  // The store (store.ts): its Secret, the replicas it allows, the server's address.
  const store = renderStore(spec, input.secrets, ns);
  problems.push(...store.problems);

  // MCP servers (mcp.ts): the murmur.yaml block, their credentials' env, their egress.
  const mcp = renderMcp({ spec, namespace: ns, clusterDomain: options.clusterDomain, secrets: input.secrets, services: input.services ?? {} });
  problems.push(...mcp.problems);

  // Hooks.
  const hooks: Hook[] = [];
  (spec.hooks ?? []).forEach((ref, i) => {
    const h = input.hooks[ref.name];
    if (!h) problems.push({ reason: 'MissingHook', fatal: true, field: `spec.hooks[${i}].name`, message: `Hook '${ref.name}' (spec.hooks[${i}]) not found in namespace '${ns}'; apply the Hook or remove the reference` });
    else hooks.push(h);
  });

  // Artifacts: names unique across artifacts and hook artifacts; a driver names a driver.
  const seen = new Map<string, string>();
  (spec.artifacts ?? []).forEach((a, i) => seen.set(a.name, `spec.artifacts[${i}]`));
  for (const h of hooks) {
    const prev = seen.get(h.spec.artifact.name);
    if (prev) problems.push({ reason: 'InvalidArtifact', fatal: true, field: prev, message: `artifact '${h.spec.artifact.name}' of Hook '${h.metadata.name}' has the same name as ${prev}; artifact names must be unique in a capsule` });
    seen.set(h.spec.artifact.name, `Hook ${h.metadata.name}`);
  }
  const driver = spec.inference?.driver?.artifact;
  if (driver !== undefined) {
    const a = (spec.artifacts ?? []).find((x) => x.name === driver);
    if (!a || (a.runtime ?? 'tool') !== 'driver') problems.push({ reason: 'InvalidArtifact', fatal: true, field: 'spec.inference.driver.artifact', message: `inference.driver.artifact '${driver}' must name an artifact with runtime driver` });
  }
  (spec.artifacts ?? []).forEach((a, i) => {
    if (!a.version && !a.source) problems.push({ reason: 'InvalidArtifact', fatal: true, field: `spec.artifacts[${i}]`, message: `artifact '${a.name}' needs a version (registry reference) or a source {url, sha256}` });
  });

  // The runtime has no default endpoint: without one every task would fail (E-RUN-012).
  if (spec.inference && !spec.inference.endpoint) {
    problems.push({ reason: 'MissingEndpoint', fatal: true, field: 'spec.inference.endpoint', message: 'spec.inference.endpoint is required: the provider base URL the driver calls, e.g. https://api.anthropic.com or https://api.openai.com/v1' });
  }
  if (spec.lifecycle?.task_acceptance === 'none') {
    problems.push({ reason: 'NotServable', fatal: false, field: 'spec.lifecycle.task_acceptance', message: "task_acceptance 'none' runs one task from the launch and exits, so its pods restart forever; use 'queue' for a capsule served over A2A" });
  } else if (spec.lifecycle?.task_acceptance === 'single') {
    problems.push({ reason: 'NotServable', fatal: false, field: 'spec.lifecycle.task_acceptance', message: "task_acceptance 'single' answers one A2A task, then the pod exits and restarts with a fresh session (its tasks/get history and unscraped token counts go with it); use 'queue' for a capsule served over A2A" });
  }

  // Network allowlist.
  const isCapsule = (pns: string, name: string) => `${pns}/${name}` in input.capsulePorts;
  const entries: AllowEntry[] = [];
  const peerTokens = new Map<string, PeerToken>();
  const rewrite = new Map<string, string | undefined>();
  const fieldOf = new Map<string, string>();
  for (const { raw, field } of allowEntriesWithField(spec)) if (!fieldOf.has(raw)) fieldOf.set(raw, field);
  for (const raw of allAllowEntries(spec)) {
    const e = parseAllow(raw, options.clusterDomain, isCapsule);
    if (e.kind === 'invalid') {
      const field = fieldOf.get(raw) ?? 'spec.capabilities.network.allow';
      problems.push({ reason: 'InvalidNetworkAllow', fatal: true, field, message: `${field}: network.allow entry '${raw}': ${e.reason}` });
      continue;
    }
    if (e.kind === 'capsule' && e.shorthand) {
      const port = input.capsulePorts[`${e.namespace}/${e.name}`];
      if (port === undefined) problems.push({ reason: 'PeerNotFound', fatal: false, field: 'capabilities.network.allow', message: `peer Capsule '${e.namespace}/${e.name}' (${raw}) does not exist yet; its URL uses port 8080 until it does` });
      rewrite.set(raw, a2aUrl(e.namespace, e.name, port ?? 8080, options.clusterDomain));
    }
    if (e.kind === 'capsule') {
      // The token file is named after the host the runtime will call (the rewritten URL's, or the
      // Service name as written); its audience is the peer's own --public-url.
      const host = e.shorthand ? `${e.name}.${e.namespace}.svc.${options.clusterDomain}` : hostOf(raw);
      const audience = `${a2aUrl(e.namespace, e.name, input.capsulePorts[`${e.namespace}/${e.name}`] ?? 8080, options.clusterDomain)}/`;
      if (host && !peerTokens.has(host) && !input.noTokenPeers?.has(`${e.namespace}/${e.name}`)) peerTokens.set(host, { host, audience });
    }
    // The runtime's allowlist takes hosts and IPs, not CIDRs (those stay NetworkPolicy-only), and
    // an IPv6 address only in brackets.
    if (e.kind === 'ip' && !raw.includes('://') && raw.includes('/')) rewrite.set(raw, undefined);
    else if (e.kind === 'ip' && isIP(raw.trim()) === 6) rewrite.set(raw, `[${raw.trim()}]`);
    entries.push(e);
  }
  entries.push(...mcp.entries);
  // Destinations the runtime process itself reaches (not the guests): artifact sources fetched at
  // staging, the inference endpoint, the OTLP collector. NetworkPolicy only; not in murmur.yaml.
  const hostCalls = [
    ...(spec.artifacts ?? []).map((a) => a.source?.url),
    ...hooks.map((h) => h.spec.artifact.source?.url),
    spec.inference?.endpoint,
    spec.observability?.otel_endpoint ?? options.otlp?.endpoint,
  ];
  if (store.egress) {
    const e = parseAllow(store.egress, options.clusterDomain, isCapsule);
    if (e.kind === 'invalid') problems.push({ reason: 'InvalidNetworkAllow', fatal: true, field: 'spec.store.postgres.address', message: `spec.store.postgres.address '${store.egress}': ${e.reason}` });
    else entries.push(e);
  }
  const seenOrigins = new Set(entries.map((e) => e.raw));
  for (const url of hostCalls) {
    if (!url) continue;
    const origin = url.replace(/^(https?:\/\/[^/?#]+).*$/i, '$1');
    if (seenOrigins.has(origin)) continue;
    seenOrigins.add(origin);
    const e = parseAllow(origin, options.clusterDomain, isCapsule);
    if (e.kind !== 'invalid') entries.push(e);
  }

  // The operator-wide OTLP headers Secret (a collector's auth token) is read by the pods from their
  // own namespace: its version rolls them when it is rotated; its absence is worth a warning, since
  // the pods then export without the headers.
  const otlpRef = options.otlp?.headersSecret;
  let otlpSecretVersion: string | undefined;
  if (otlpRef) {
    const s = input.secrets[otlpRef.name];
    otlpSecretVersion = s?.resourceVersion ?? 'absent';
    if (!s) problems.push({ reason: 'MissingSecret', fatal: false, field: 'otlp.headersSecret', message: `OTLP headers Secret '${otlpRef.name}' (the operator's otlp.headersSecret) not found in namespace '${ns}'; the capsule's spans are exported without those headers until it exists` });
    else if (!s.keys.includes(otlpRef.key)) problems.push({ reason: 'MissingSecretKey', fatal: false, field: 'otlp.headersSecret.key', message: `OTLP headers Secret '${otlpRef.name}' has no key '${otlpRef.key}' (keys: ${s.keys.join(', ') || 'none'}); spans are exported without those headers` });
  }

  const murmurYaml = renderManifest({ capsule, hooks, rewriteAllow: (e) => (rewrite.has(e) ? rewrite.get(e) : e), mcp });
  // Whatever admission let through, the runtime would refuse at start (exit 1, a crash-looping pod
  // under a green Capsule): run its own validator on the very file the pods will read. Skipped
  // when a fatal problem already blocks the apply (its message is the more precise one).
  if (!problems.some((p) => p.fatal)) problems.push(...(input.refusals ?? runtimeRefusals)(murmurYaml, spec.artifacts?.length ?? 0));
  const { replicas: _replicas, ...rolling } = spec;
  const configHash = sha256(
    stableJson({
      manifest: murmurYaml,
      spec: rolling,
      hooks: hooks.map((h) => ({ name: h.metadata.name, spec: h.spec })),
      secret: secretVersion,
      ...(apiKeysVersion !== undefined ? { apiKeys: apiKeysVersion } : {}),
      otlp: options.otlp ?? null,
      ...(otlpSecretVersion !== undefined ? { otlpSecret: otlpSecretVersion } : {}),
      ...(store.secretVersion !== undefined ? { storeSecret: store.secretVersion } : {}),
      ...(Object.keys(mcp.secretVersions).length ? { mcpSecrets: mcp.secretVersions } : {}),
      image: options.image,
    }),
  ).slice(0, 32);

  const url = a2aUrl(ns, capsule.metadata.name, spec.servicePort ?? 8080, options.clusterDomain);
  const objects: KubeObject[] = [
    buildServiceAccount(capsule),
    buildConfigMap(capsule, murmurYaml),
    buildService(capsule),
    buildEgressPolicy(capsule, entries, options, [...(auth.serviceAccounts ? apiServerEgress(options) : []), ...mcp.rules]),
    buildIngressPolicy(capsule, input.callers, options),
    buildDeployment(capsule, options, configHash, `${url}/`, hooks, a2aAuth(capsule, [...peerTokens.values()].sort((a, b) => (a.host < b.host ? -1 : 1)), input.callers), [...store.env, ...mcp.env]),
  ];
  const budget = buildDisruptionBudget(capsule);
  if (budget) objects.push(budget);
  return { objects, problems, a2aUrl: url, configHash };
}

/** The lowercase host of an allow entry written as a URL or host[:port]. */
function hostOf(raw: string): string | undefined {
  try {
    return new URL(raw.includes('://') ? raw.trim() : `http://${raw.trim()}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** Manifest field → Capsule field: artifacts past the Capsule's own are the hooks' (their grants come from spec.hooks[]). */
function capsuleField(field: string | undefined, nArtifacts: number): string {
  if (!field) return 'spec';
  const m = /^artifacts\[(\d+)\](.*)$/.exec(field);
  if (m && Number(m[1]) >= nArtifacts) return `spec.hooks[${Number(m[1]) - nArtifacts}]${m[2]}`;
  return `spec.${field}`;
}

/** The runtime's manifest validator on the rendered murmur.yaml, as InvalidManifest problems with its own messages. */
export function runtimeRefusals(murmurYaml: string, nArtifacts: number): Problem[] {
  try {
    parseManifest(murmurYaml, 'murmur.yaml');
    return [];
  } catch (e) {
    if (!isMurErrorList(e)) throw e;
    return e.errors.map((x) => {
      const field = capsuleField(x.location?.field, nArtifacts);
      return { reason: 'InvalidManifest' as const, fatal: true, field, message: `${field}: the runtime refuses the rendered murmur.yaml: ${x.message} [${x.code}]${x.hint ? `; ${x.hint}` : ''}` };
    });
  }
}
