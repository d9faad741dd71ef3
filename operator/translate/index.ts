/**
 * translate: a PURE function from a Capsule (+ its Hooks, the Secrets it names, the capsules that
 * name it and the known capsules' Service ports) to the objects that should exist, the problems
 * that stop it (missing Secret, missing Hook, invalid artifact…), the A2A URL and the config hash.
 * No API calls, no clock, no randomness: the reconciler applies what this returns.
 */
import type { Capsule, CapsuleSpec, Hook, KubeObject, SecretInfo, ServiceInfo } from '../api/types.ts';
import { sha256, stableJson } from './builders/common.ts';
import { buildConfigMap } from './builders/configmap.ts';
import { buildDeployment } from './builders/deployment.ts';
import { buildDisruptionBudget } from './builders/disruption.ts';
import { renderManifest } from './builders/manifest.ts';
import { buildEgressPolicy, buildIngressPolicy } from './builders/networkpolicy.ts';
import { buildService } from './builders/service.ts';
import { buildActivatorSlice } from './builders/activator-slice.ts';
import { buildStoreClaim } from './builders/store-claim.ts';
import { buildServiceAccount } from './builders/serviceaccount.ts';
import { a2aAuth, apiServerEgress, authSettings } from './builders/a2a-auth.ts';
import { isMurErrorList, parseManifest } from '../../runtime/manifest/index.ts';
import { a2aUrl, renderAllowlist } from './allowlist.ts';
import type { TranslateOptions } from './options.ts';
import { renderStore } from './store.ts';
import { renderMcp } from './mcp.ts';
import type { Problem } from './problems.ts';
import { effectiveSleep, type SleepInput, type SleepPolicy } from './sleep.ts';

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
  /** The sleep state the controller observed (operator/translate/sleep.ts); absent = awake, no activator pod known. */
  sleep?: SleepInput;
  /** The runtime's validator on the rendered murmur.yaml (default `runtimeRefusals`; the controller passes a memo of it, reconcile/refusals-memo.ts). */
  refusals?: (murmurYaml: string, nArtifacts: number) => Problem[];
}

export { ADMISSION_CODES, PROBLEM_CODES, type Problem, type ProblemReason } from './problems.ts';
export { a2aUrl } from './allowlist.ts';
export { effectiveSleep, formatDuration, parseDuration, sleepPolicy, type SleepInput, type SleepPolicy } from './sleep.ts';

export interface TranslateResult {
  objects: KubeObject[];
  problems: Problem[];
  a2aUrl: string;
  configHash: string;
  /** Whether and when the capsule sleeps, the activator considered (sleep.ts): the controller's Sleeping condition. */
  sleep: SleepPolicy;
}

/**
 * The steps in order: the Secrets, store, MCP servers and Hooks the Capsule names (each a version
 * for the config hash, or a problem), the checks of its artifacts and serving, its allowlist, then
 * murmur.yaml, the runtime's own verdict on it, the hash, and the objects. Problems keep that order.
 */
export function translate(input: TranslateInput): TranslateResult {
  const { capsule, options } = input;
  const ns = capsule.metadata.namespace ?? 'default';
  const spec = capsule.spec;
  const problems: Problem[] = [];

  const secretVersion = inferenceSecret(input, ns, problems);
  const auth = authSettings(capsule);
  const apiKeysVersion = apiKeysSecret(auth.apiKeys?.secretName, input, ns, problems);
  // The store (store.ts): its Secret, the replicas it allows, the server's address.
  const store = renderStore(spec, input.secrets, ns);
  problems.push(...store.problems);
  // Sleep (sleep.ts): whether the capsule may sleep, with the activator the chart installed.
  const sleep = effectiveSleep(capsule, options);
  problems.push(...sleep.problems);
  const sleeps = sleep.afterIdleSeconds !== null;
  // MCP servers (mcp.ts): the murmur.yaml block, their credentials' env, their egress.
  const mcp = renderMcp({ spec, namespace: ns, clusterDomain: options.clusterDomain, secrets: input.secrets, services: input.services ?? {} });
  problems.push(...mcp.problems);
  const hooks = resolveHooks(input, ns, problems);
  checkArtifacts(spec, hooks, problems);
  checkServing(spec, problems);
  const allow = renderAllowlist(
    { spec, hooks, options, capsulePorts: input.capsulePorts, noTokenPeers: input.noTokenPeers, mcpEntries: mcp.entries, storeEgress: store.egress },
    problems,
  );
  const otlpSecretVersion = otlpSecret(input, ns, problems);

  const murmurYaml = renderManifest({ capsule, hooks, rewriteAllow: allow.rewrite, mcp });
  // Whatever admission let through, the runtime would refuse at start (exit 1, a crash-looping pod
  // under a green Capsule): run its own validator on the very file the pods will read. Skipped
  // when a fatal problem already blocks the apply (its message is the more precise one).
  if (!problems.some((p) => p.fatal)) problems.push(...(input.refusals ?? runtimeRefusals)(murmurYaml, spec.artifacts?.length ?? 0));
  // Neither scaling nor the sleep setting changes a pod: out of the hash, so they never roll the pods.
  const { replicas: _replicas, sleep: _sleep, ...rolling } = spec;
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
    buildEgressPolicy(capsule, allow.entries, options, [...(auth.serviceAccounts ? apiServerEgress(options) : []), ...mcp.rules]),
    buildIngressPolicy(capsule, input.callers, options, sleeps),
  ];
  const claim = buildStoreClaim(capsule);
  if (claim) objects.push(claim);
  // Before the Deployment: the activator's endpoints are ready before the replicas go to 0.
  if (sleeps && options.activator) objects.push(buildActivatorSlice(capsule, options.activator, input.sleep));
  const asleep = sleeps && input.sleep?.phase === 'Sleeping';
  objects.push(
    buildDeployment(capsule, options, configHash, `${url}/`, hooks, a2aAuth(capsule, allow.peerTokens, input.callers), [...store.env, ...mcp.env], asleep),
  );
  const budget = buildDisruptionBudget(capsule);
  if (budget) objects.push(budget);
  return { objects, problems, a2aUrl: url, configHash, sleep };
}

/** The Secret holding the provider API key: its resourceVersion ('' without one). */
function inferenceSecret(input: TranslateInput, ns: string, problems: Problem[]): string {
  const keyRef = input.capsule.spec.inference?.apiKeySecretRef;
  if (!keyRef) return '';
  const s = input.secrets[keyRef.name];
  if (!s)
    problems.push({
      reason: 'MissingSecret',
      fatal: true,
      field: 'spec.inference.apiKeySecretRef',
      message: `Secret '${keyRef.name}' (inference.apiKeySecretRef) not found in namespace '${ns}'; create it with the provider API key under key '${keyRef.key}'`,
    });
  else if (!s.keys.includes(keyRef.key))
    problems.push({
      reason: 'MissingSecretKey',
      fatal: true,
      field: 'spec.inference.apiKeySecretRef.key',
      message: `Secret '${keyRef.name}' has no key '${keyRef.key}' (keys: ${s.keys.join(', ') || 'none'})`,
    });
  else return s.resourceVersion;
  return '';
}

/** The Secret holding the A2A API keys (one key per holder): its resourceVersion. */
function apiKeysSecret(name: string | undefined, input: TranslateInput, ns: string, problems: Problem[]): string | undefined {
  if (name === undefined) return undefined;
  const s = input.secrets[name];
  if (!s)
    problems.push({
      reason: 'MissingSecret',
      fatal: true,
      field: 'spec.a2a.auth.apiKeys.secretName',
      message: `Secret '${name}' (a2a.auth.apiKeys) not found in namespace '${ns}'; create it with one key per API key holder, e.g. kubectl create secret generic ${name} --from-literal=ci-bot=$(openssl rand -hex 32)`,
    });
  else if (s.keys.length === 0)
    problems.push({
      reason: 'MissingSecretKey',
      fatal: true,
      field: 'spec.a2a.auth.apiKeys.secretName',
      message: `Secret '${name}' (a2a.auth.apiKeys) has no keys; add one per API key holder (the key name is the holder, its value the API key)`,
    });
  else return s.resourceVersion;
  return undefined;
}

/** The Hooks spec.hooks names, in order; each missing one is a problem. */
function resolveHooks(input: TranslateInput, ns: string, problems: Problem[]): Hook[] {
  const hooks: Hook[] = [];
  (input.capsule.spec.hooks ?? []).forEach((ref, i) => {
    const h = input.hooks[ref.name];
    if (!h)
      problems.push({
        reason: 'MissingHook',
        fatal: true,
        field: `spec.hooks[${i}].name`,
        message: `Hook '${ref.name}' (spec.hooks[${i}]) not found in namespace '${ns}'; apply the Hook or remove the reference`,
      });
    else hooks.push(h);
  });
  return hooks;
}

/** Artifacts: names unique across artifacts and hook artifacts; a driver names a driver; each has a version or a source. */
function checkArtifacts(spec: CapsuleSpec, hooks: Hook[], problems: Problem[]): void {
  const seen = new Map<string, string>();
  for (const [i, a] of (spec.artifacts ?? []).entries()) seen.set(a.name, `spec.artifacts[${i}]`);
  for (const h of hooks) {
    const prev = seen.get(h.spec.artifact.name);
    if (prev)
      problems.push({
        reason: 'InvalidArtifact',
        fatal: true,
        field: prev,
        message: `artifact '${h.spec.artifact.name}' of Hook '${h.metadata.name}' has the same name as ${prev}; artifact names must be unique in a capsule`,
      });
    seen.set(h.spec.artifact.name, `Hook ${h.metadata.name}`);
  }
  const driver = spec.inference?.driver?.artifact;
  if (driver !== undefined) {
    const a = (spec.artifacts ?? []).find((x) => x.name === driver);
    if (!a || (a.runtime ?? 'tool') !== 'driver')
      problems.push({
        reason: 'InvalidArtifact',
        fatal: true,
        field: 'spec.inference.driver.artifact',
        message: `inference.driver.artifact '${driver}' must name an artifact with runtime driver`,
      });
  }
  (spec.artifacts ?? []).forEach((a, i) => {
    if (!a.version && !a.source)
      problems.push({
        reason: 'InvalidArtifact',
        fatal: true,
        field: `spec.artifacts[${i}]`,
        message: `artifact '${a.name}' needs a version (registry reference) or a source {url, sha256}`,
      });
  });
}

/** What a served capsule needs: an inference endpoint, and a task acceptance that keeps its pods up. */
function checkServing(spec: CapsuleSpec, problems: Problem[]): void {
  // The runtime has no default endpoint: without one every task would fail (E-RUN-012).
  if (spec.inference && !spec.inference.endpoint) {
    problems.push({
      reason: 'MissingEndpoint',
      fatal: true,
      field: 'spec.inference.endpoint',
      message: 'spec.inference.endpoint is required: the provider base URL the driver calls, e.g. https://api.anthropic.com or https://api.openai.com/v1',
    });
  }
  if (spec.lifecycle?.task_acceptance === 'none') {
    problems.push({
      reason: 'NotServable',
      fatal: false,
      field: 'spec.lifecycle.task_acceptance',
      message: "task_acceptance 'none' runs one task from the launch and exits, so its pods restart forever; use 'queue' for a capsule served over A2A",
    });
  } else if (spec.lifecycle?.task_acceptance === 'single') {
    problems.push({
      reason: 'NotServable',
      fatal: false,
      field: 'spec.lifecycle.task_acceptance',
      message:
        "task_acceptance 'single' answers one A2A task, then the pod exits and restarts with a fresh session (its tasks/get history and unscraped token counts go with it); use 'queue' for a capsule served over A2A",
    });
  }
}

/**
 * The operator-wide OTLP headers Secret (a collector's auth token) is read by the pods from their
 * own namespace: its version rolls them when it is rotated; its absence is worth a warning, since
 * the pods then export without the headers.
 */
function otlpSecret(input: TranslateInput, ns: string, problems: Problem[]): string | undefined {
  const otlpRef = input.options.otlp?.headersSecret;
  if (!otlpRef) return undefined;
  const s = input.secrets[otlpRef.name];
  if (!s)
    problems.push({
      reason: 'MissingSecret',
      fatal: false,
      field: 'otlp.headersSecret',
      message: `OTLP headers Secret '${otlpRef.name}' (the operator's otlp.headersSecret) not found in namespace '${ns}'; the capsule's spans are exported without those headers until it exists`,
    });
  else if (!s.keys.includes(otlpRef.key))
    problems.push({
      reason: 'MissingSecretKey',
      fatal: false,
      field: 'otlp.headersSecret.key',
      message: `OTLP headers Secret '${otlpRef.name}' has no key '${otlpRef.key}' (keys: ${s.keys.join(', ') || 'none'}); spans are exported without those headers`,
    });
  return s?.resourceVersion ?? 'absent';
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
      return {
        reason: 'InvalidManifest' as const,
        fatal: true,
        field,
        message: `${field}: the runtime refuses the rendered murmur.yaml: ${x.message} [${x.code}]${x.hint ? `; ${x.hint}` : ''}`,
      };
    });
  }
}
