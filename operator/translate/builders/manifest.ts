/**
 * Renders the capsule's `murmur.yaml` from the Capsule spec and its resolved Hooks. Kubernetes-only
 * fields (replicas, resources, image, servicePort, ingress, apiKeySecretRef) are left out; the API key
 * reaches the runtime as env MURMUR_INFERENCE_API_KEY, never through the file.
 */
import { stringify } from 'yaml';
import type { ArtifactSpec, Capsule, Hook } from '../../api/types.ts';
import { DEFAULT_INPUT_TIMEOUT_SECS } from '../../../runtime/manifest/index.ts';

/**
 * lifecycle.input_timeout_secs rendered for a Capsule that sets none (docs/operator.md): the
 * runtime's own default, written out so the ConfigMap says what the pod does.
 */
export { DEFAULT_INPUT_TIMEOUT_SECS };

export interface ManifestInput {
  capsule: Capsule;
  /** Resolved Hooks in spec.hooks order. */
  hooks: Hook[];
  /**
   * Allow entry → what the runtime should see: capsule:// rewritten to the peer's Service URL;
   * undefined drops it (CIDRs: a NetworkPolicy-only grant the runtime's allowlist cannot hold).
   */
  rewriteAllow: (entry: string) => string | undefined;
  /** The `mcp:` block (translate/mcp.ts) and the origins its servers add to the capsule-wide allowlist. */
  mcp?: { block?: Record<string, unknown>; allow: string[] };
}

function compact<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as T;
}

/** An artifact source as murmur.yaml spells it: `{oci}` or `{url, sha256}`. */
function source(src: ArtifactSpec['source']): Record<string, unknown> | undefined {
  if (!src) return undefined;
  return src.oci ? { oci: src.oci } : { url: src.url, sha256: src.sha256 };
}

function capabilities(c: ArtifactSpec['capabilities'], rewrite: (e: string) => string | undefined): Record<string, unknown> | undefined {
  if (!c) return undefined;
  const out: Record<string, unknown> = { ...c };
  if (c.network) out.network = compact({ ...c.network, allow: c.network.allow?.map(rewrite).filter((e): e is string => e !== undefined) });
  return out;
}

/** The capsule-wide grant with the MCP servers' origins added (the runtime refuses a server its allowlist does not cover). */
function withMcpAllow(c: Record<string, unknown> | undefined, extra: readonly string[]): Record<string, unknown> | undefined {
  if (!extra.length) return c;
  const network = (c?.network ?? {}) as { allow?: string[] };
  const allow = [...(network.allow ?? [])];
  for (const e of extra) if (!allow.includes(e)) allow.push(e);
  return { ...c, network: { ...network, allow } };
}

export function renderManifest({ capsule, hooks, rewriteAllow, mcp }: ManifestInput): string {
  const s = capsule.spec;
  const artifacts: Record<string, unknown>[] = (s.artifacts ?? []).map((a) =>
    compact({
      name: a.name,
      version: a.version,
      runtime: a.runtime ?? 'tool',
      source: source(a.source),
      capabilities: capabilities(a.capabilities, rewriteAllow),
      on_overflow: a.on_overflow,
      config: a.config,
    }),
  );
  hooks.forEach((h, i) => {
    const ref = s.hooks?.[i];
    artifacts.push(
      compact({
        name: h.spec.artifact.name,
        version: h.spec.artifact.version,
        runtime: 'hook',
        source: source(h.spec.artifact.source),
        // The Hook's contract goes into the entry: a bare .wasm or OCI component has no manifest of
        // its own and gets this one (without it, it would run as an all-events `none` observer);
        // an artifact with its own murmur.yaml must agree with it or the runtime refuses (E-REG-017).
        binding: h.spec.binding,
        execution_mode: h.spec.execution_mode,
        commit_policy: h.spec.commit_policy,
        on_overflow: h.spec.on_overflow,
        capabilities: capabilities(ref?.capabilities, rewriteAllow),
      }),
    );
  });
  const inf = s.inference;
  const inference = inf
    ? compact({
        driver: inf.driver ? compact({ artifact: inf.driver.artifact, config: inf.driver.config }) : undefined,
        model: inf.model,
        endpoint: inf.endpoint,
        max_turns: inf.max_turns,
        max_tokens: inf.max_tokens,
        max_session_tokens: inf.max_session_tokens,
        system_prompt: inf.system_prompt,
        compaction: inf.compaction,
      })
    : undefined;
  const doc = compact({
    name: s.name ?? capsule.metadata.name,
    version: s.version ?? '0.0.0',
    artifacts: artifacts.length ? artifacts : undefined,
    capabilities: withMcpAllow(capabilities(s.capabilities, rewriteAllow), mcp?.allow ?? []),
    inference,
    context: s.context,
    // A Capsule on Kubernetes is a long-running A2A service: queue unless it says otherwise (the
    // runtime's own default, single, would end the pod after one task).
    // A forgotten request-input question must not hold a pod forever: an hour unless the Capsule says otherwise.
    lifecycle: { task_acceptance: 'queue', input_timeout_secs: DEFAULT_INPUT_TIMEOUT_SECS, ...s.lifecycle },
    observability: s.observability,
    trace: s.trace,
    mcp: mcp?.block,
  });
  return (
    `# Rendered by capsule-operator from Capsule ${capsule.metadata.namespace}/${capsule.metadata.name}; edit the Capsule, not this file.\n` +
    stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false })
  );
}
