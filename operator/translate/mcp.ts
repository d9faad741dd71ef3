/**
 * The Capsule's MCP servers (spec.mcp.servers, docs/mcp.md "On Kubernetes") as the pods get them:
 *  - the `mcp:` block of murmur.yaml: a `service` becomes its cluster DNS URL, and every server's
 *    origin joins the capsule-wide network.allow of the rendered file (the runtime refuses a server
 *    its allowlist does not cover, E-MCP-003, and checks every request against it);
 *  - env vars from the Secret refs, named in the file as `token_env` / `headers_env` (the values
 *    never enter the file);
 *  - egress: a `service` admits exactly that Service's pods (its selector, read from the Service)
 *    on its target port, as a `capsule://` peer admits the peer's pods; a `url` is an allow entry
 *    like any other (a hostname opens its ports, an IP its block, a Service name its namespace).
 * An MCP server the Capsule does not list is reachable by neither the runtime nor the network.
 */
import type { CapsuleSpec, McpServerSpec, SecretInfo, SecretKeyRef, ServiceInfo } from '../api/types.ts';
import { parseAllow, type AllowEntry } from './network.ts';

/**
 * A problem of translate's (problems.ts `Problem`, narrowed to the reasons this file raises):
 * the reasons are problems.ts's PROBLEM_CODES keys.
 */
export interface McpProblem {
  reason: 'InvalidMcpServer' | 'McpServiceNotFound' | 'McpServiceUnusable' | 'MissingSecret' | 'MissingSecretKey';
  fatal: boolean;
  field: string;
  message: string;
}

export interface McpRendering {
  /** The `mcp:` block of murmur.yaml (absent: the Capsule names no MCP server). */
  block?: { servers: Record<string, unknown>[] };
  /** Origins the rendered capsule-wide network.allow must hold (murmur.yaml only). */
  allow: string[];
  /** Env of the runtime container: the credentials, from their Secrets. */
  env: Record<string, unknown>[];
  /** Egress rules to the Services' pods. */
  rules: Record<string, unknown>[];
  /** The `url` servers' origins, for the egress policy like other allow entries. */
  entries: AllowEntry[];
  problems: McpProblem[];
  /** resourceVersion of every Secret read (in the config hash: a rotated token rolls the pods). */
  secretVersions: Record<string, string>;
}

const NS_LABEL = 'kubernetes.io/metadata.name';
export const DEFAULT_MCP_PATH = '/mcp';

/** `<ns>/<name>` of the Services a spec's MCP servers name (what the controller looks up). */
export function mcpServiceKeys(namespace: string, spec: CapsuleSpec): string[] {
  return [...new Set((spec.mcp?.servers ?? []).flatMap((s) => (s.service ? [`${s.service.namespace ?? namespace}/${s.service.name}`] : [])))];
}

/** Names of the Secrets a spec's MCP servers read. */
export function mcpSecretNames(spec: CapsuleSpec): string[] {
  return [
    ...new Set(
      (spec.mcp?.servers ?? []).flatMap((s) => [s.tokenSecretRef?.name, ...(s.headers ?? []).map((h) => h.secretKeyRef.name)]).filter((n): n is string => !!n),
    ),
  ];
}

/** The env var a server's credential reaches the runtime as: MURMUR_MCP_<NAME>_TOKEN / _HEADER_<i>. */
export function mcpEnvName(server: string, what: 'TOKEN' | `HEADER_${number}`): string {
  return `MURMUR_MCP_${server.toUpperCase().replace(/-/g, '_')}_${what}`;
}

export interface McpInput {
  spec: CapsuleSpec;
  namespace: string;
  clusterDomain: string;
  secrets: Record<string, SecretInfo | undefined>;
  /** The Services the servers name, by `<ns>/<name>` (absent: not found, or not visible to the operator). */
  services: Record<string, ServiceInfo | undefined>;
}

export function renderMcp(input: McpInput): McpRendering {
  const out: McpRendering = { allow: [], env: [], rules: [], entries: [], problems: [], secretVersions: {} };
  const servers = input.spec.mcp?.servers ?? [];
  if (!servers.length) return out;
  const blocks: Record<string, unknown>[] = [];
  servers.forEach((s, i) => {
    const field = `spec.mcp.servers[${i}]`;
    const url = serverUrl(s, input, field, out);
    if (!url) return;
    const origin = new URL(url).origin;
    if (!out.allow.includes(origin)) out.allow.push(origin);
    const headers: Record<string, string> = {};
    let tokenEnv: string | undefined;
    if (s.tokenSecretRef && secretRef(s.tokenSecretRef, `${field}.tokenSecretRef`, input, out)) {
      tokenEnv = mcpEnvName(s.name, 'TOKEN');
      out.env.push({ name: tokenEnv, valueFrom: { secretKeyRef: { name: s.tokenSecretRef.name, key: s.tokenSecretRef.key } } });
    }
    (s.headers ?? []).forEach((h, j) => {
      if (!secretRef(h.secretKeyRef, `${field}.headers[${j}].secretKeyRef`, input, out)) return;
      const env = mcpEnvName(s.name, `HEADER_${j}`);
      headers[h.name] = env;
      out.env.push({ name: env, valueFrom: { secretKeyRef: { name: h.secretKeyRef.name, key: h.secretKeyRef.key } } });
    });
    blocks.push(
      compact({
        name: s.name,
        url,
        tools: s.tools,
        token_env: tokenEnv,
        headers_env: Object.keys(headers).length ? headers : undefined,
        sampling: s.sampling,
        elicitation: s.elicitation,
      }),
    );
  });
  if (blocks.length) out.block = { servers: blocks };
  return out;
}

/** The server's URL; for a Service, also its egress rule (or the problem that leaves it out). */
function serverUrl(s: McpServerSpec, input: McpInput, field: string, out: McpRendering): string | undefined {
  // Admission refuses both or neither (E-OP-011); this reports a Capsule stored before the rule.
  if (!!s.url === !!s.service) {
    out.problems.push({
      reason: 'InvalidMcpServer',
      fatal: true,
      field,
      message: `${field} (MCP server '${s.name}'): give url or service, not ${s.url ? 'both' : 'neither'}`,
    });
    return undefined;
  }
  if (s.url) {
    const origin = safeOrigin(s.url);
    const e = origin ? parseAllow(origin, input.clusterDomain, () => false) : undefined;
    if (!e || e.kind === 'invalid') {
      out.problems.push({
        reason: 'InvalidMcpServer',
        fatal: true,
        field: `${field}.url`,
        message: `${field}.url '${s.url}' (MCP server '${s.name}') is not an http(s) URL the network allowlist can hold${e?.kind === 'invalid' ? `: ${e.reason}` : ''}`,
      });
      return undefined;
    }
    out.entries.push(e);
    return s.url;
  }
  const ref = s.service!;
  const ns = ref.namespace ?? input.namespace;
  const path = ref.path ?? DEFAULT_MCP_PATH;
  // Through URL: the default port (80) is left out, as the runtime's allowlist spells it.
  const url = new URL(`http://${ref.name}.${ns}.svc.${input.clusterDomain}:${ref.port}${path.startsWith('/') ? path : `/${path}`}`).href;
  const svc = input.services[`${ns}/${ref.name}`];
  // Not found or unusable: the URL is still rendered (the runtime then fails that server's calls,
  // E-MCP-009) but no egress rule is: the policy stays closed until the Service says where its pods are.
  if (!svc) {
    out.problems.push({
      reason: 'McpServiceNotFound',
      fatal: false,
      field: `${field}.service`,
      message: `Service '${ns}/${ref.name}' (MCP server '${s.name}', ${field}.service) not found; its egress rule is rendered when it exists`,
    });
    return url;
  }
  const port = svc.ports.find((p) => p.port === ref.port);
  if (!svc.selector || !Object.keys(svc.selector).length || !port) {
    const why = !port
      ? `has no port ${ref.port} (ports: ${svc.ports.map((p) => p.port).join(', ') || 'none'})`
      : 'has no pod selector (an ExternalName Service, or hand-made Endpoints): NetworkPolicy cannot name its pods';
    out.problems.push({
      reason: 'McpServiceUnusable',
      fatal: false,
      field: `${field}.service`,
      message: `Service '${ns}/${ref.name}' (MCP server '${s.name}') ${why}; no egress rule is rendered for it`,
    });
    return url;
  }
  // NetworkPolicy sees pod ports: the target port (a number, or the container port's name).
  out.rules.push({
    to: [{ namespaceSelector: { matchLabels: { [NS_LABEL]: ns } }, podSelector: { matchLabels: { ...svc.selector } } }],
    ports: [{ protocol: 'TCP', port: port.targetPort ?? port.port }],
  });
  return url;
}

/** Is the Secret there with the key? Records its version, or the problem (fatal: the pod would not start). */
function secretRef(ref: SecretKeyRef, field: string, input: McpInput, out: McpRendering): boolean {
  const s = input.secrets[ref.name];
  if (!s) {
    out.problems.push({
      reason: 'MissingSecret',
      fatal: true,
      field,
      message: `Secret '${ref.name}' (${field}) not found in namespace '${input.namespace}'; create it with the MCP server's credential under key '${ref.key}'`,
    });
    return false;
  }
  if (!s.keys.includes(ref.key)) {
    out.problems.push({
      reason: 'MissingSecretKey',
      fatal: true,
      field: `${field}.key`,
      message: `Secret '${ref.name}' (${field}) has no key '${ref.key}' (keys: ${s.keys.join(', ') || 'none'})`,
    });
    return false;
  }
  out.secretVersions[ref.name] = s.resourceVersion;
  return true;
}

function safeOrigin(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

function compact(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** What the controller keeps of a Service (its informer's transform): the selector and the ports. */
export function serviceInfo(o: {
  metadata: { name: string; namespace?: string };
  spec?: { selector?: Record<string, string>; ports?: Array<{ name?: string; port: number; targetPort?: number | string }> };
}): ServiceInfo {
  const selector = o.spec?.selector;
  return {
    name: o.metadata.name,
    namespace: o.metadata.namespace ?? 'default',
    ...(selector && Object.keys(selector).length ? { selector } : {}),
    ports: (o.spec?.ports ?? []).map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      port: p.port,
      ...(p.targetPort !== undefined ? { targetPort: p.targetPort } : {}),
    })),
  };
}
