/**
 * TypeScript shapes of the `murmur.io/v1alpha1` custom resources and of the Kubernetes objects the
 * operator reads. Manifest blocks (artifacts, capabilities, inference, context, lifecycle,
 * observability) keep the snake_case spelling of `murmur.yaml` so a block can be copied between a
 * capsule directory and a Capsule object; Kubernetes-only fields (replicas, resources, image,
 * servicePort, ingress, apiKeySecretRef) use Kubernetes camelCase.
 */
import type { CommitPolicy, ExecutionMode, Handler } from '../../runtime/contracts/commit-table.ts';

export const GROUP = 'murmur.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
  [k: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

export interface ArtifactSource {
  /** `https://` location of the component or artifact bundle (with `sha256`). */
  url?: string;
  /** Lowercase hex sha256 of the artifact bytes; the runtime refuses a mismatch. */
  sha256?: string;
  /** A digest-pinned Wasm OCI artifact, mounted as a pod image volume (instead of url + sha256). */
  oci?: string;
}

export type ArtifactRuntime = 'tool' | 'driver' | 'hook' | 'skill';

export interface Capabilities {
  network?: { allow?: string[] };
  filesystem?: { scope?: string };
  shell?: { allow: string[]; strip_env?: string[] };
  env?: { allow?: string[] };
  limits?: { memory_bytes?: number | string; deadline_seconds?: number; hook_deadline_seconds?: number };
}

export interface ArtifactSpec {
  name: string;
  version?: string;
  runtime?: ArtifactRuntime;
  source?: ArtifactSource;
  capabilities?: Capabilities;
  on_overflow?: 'drop' | 'block';
  config?: Record<string, unknown>;
}

export interface SecretKeyRef {
  name: string;
  key: string;
}

export interface InferenceSpec {
  driver?: { artifact: string; config?: Record<string, unknown> };
  model?: string;
  endpoint?: string;
  max_turns?: number;
  max_tokens?: number;
  max_session_tokens?: number;
  system_prompt?: string;
  compaction?: { threshold?: number; model?: string; system_prompt?: string };
  apiKeySecretRef?: SecretKeyRef;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface IngressPeer {
  /** A namespace by name (all its pods, unless podSelector narrows). */
  namespace?: string;
  namespaceSelector?: LabelSelector;
  podSelector?: LabelSelector;
}

export interface HookRef {
  /** Name of a Hook object in the Capsule's namespace. */
  name: string;
  /** The grant this capsule gives the hook (a hook's grant comes from the capsule, never its own manifest). */
  capabilities?: Capabilities;
}

export interface CapsuleSpec {
  name?: string;
  version?: string;
  artifacts?: ArtifactSpec[];
  capabilities?: Capabilities;
  inference?: InferenceSpec;
  context?: { max_tokens?: number; seed_budget?: number; seed_overflow_margin?: number };
  lifecycle?: {
    task_acceptance?: 'none' | 'single' | 'queue';
    queue_depth?: number;
    input_timeout_secs?: number;
    conversation?: 'stateless' | 'threaded';
    max_task_reopens?: number;
    delegation_deadline_secs?: number;
  };
  observability?: { otel_endpoint?: string };
  trace?: { include_tool_output?: boolean };
  hooks?: HookRef[];
  /** Where the runtime keeps tasks, push configs and the conversation record (default: embedded). */
  store?: StoreSpec;
  replicas?: number;
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  /** sizeLimit of the session `workdir` emptyDir (SQLite store, caches); default 1Gi (translate/builders/storage.ts). */
  workdirSizeLimit?: string;
  image?: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  servicePort?: number;
  ingress?: { from?: IngressPeer[] };
  /** Who may call the capsule over A2A (operator/translate/builders/a2a-auth.ts, docs/a2a.md). */
  a2a?: { auth?: A2AAuthSpec };
  /** MCP servers whose tools the model may call (operator/translate/mcp.ts, docs/mcp.md). */
  mcp?: { servers: McpServerSpec[] };
  /** Scale to zero when idle (operator/translate/sleep.ts, docs/operator.md "Sleeping Capsules"). */
  sleep?: SleepSpec;
}

/**
 * `spec.sleep`: `afterIdle` is a Go-style duration (`30s`, `15m`, `1h30m`; at least 10s) or `never`.
 * Default: 15m when the store survives the pod's deletion (postgres, or embedded on a volumeClaim)
 * and the capsule takes no API keys; `never` otherwise.
 */
export interface SleepSpec {
  afterIdle?: string;
}

/**
 * One MCP server of `spec.mcp.servers`: reached by `url` or by an in-cluster `service`; its
 * credentials come from Secrets as env vars the rendered murmur.yaml names (`token_env`,
 * `headers_env`), never through the file.
 */
export interface McpServerSpec {
  name: string;
  tools: string[];
  /** A Streamable HTTP endpoint (outside the cluster, or any host the runtime's allowlist takes). */
  url?: string;
  /** An in-cluster Service: the egress NetworkPolicy admits exactly its pods on its target port. */
  service?: McpServiceRef;
  /** Sent as `Authorization: Bearer <value>`. */
  tokenSecretRef?: SecretKeyRef;
  /** More headers, each value from a Secret key. */
  headers?: Array<{ name: string; secretKeyRef: SecretKeyRef }>;
  sampling?: 'refuse' | 'driver';
  elicitation?: 'refuse' | 'input-required';
}

export interface McpServiceRef {
  name: string;
  /** Default: the Capsule's namespace. */
  namespace?: string;
  /** The Service port (not the pod's). */
  port: number;
  /** The endpoint's path (default /mcp). */
  path?: string;
}

/** What the operator keeps of a Service an MCP server names: where its pods are, never more. */
export interface ServiceInfo {
  name: string;
  namespace: string;
  /** Absent: a Service without a selector (ExternalName, hand-made Endpoints). */
  selector?: Record<string, string>;
  ports: Array<{ name?: string; port: number; targetPort?: number | string }>;
}

/** `spec.a2a.auth`: the A2A schemes the capsule's pods accept. Default: ServiceAccount tokens only. */
export interface A2AAuthSpec {
  /** Serve callers without credentials (one shared, untrusted anonymous caller). Default false. */
  anonymous?: boolean;
  /** Accept Kubernetes ServiceAccount tokens projected for this capsule's URL (TokenReview). Default true. */
  serviceAccounts?: boolean;
  /** Bearer API keys: every key of this Secret (same namespace) is one holder's key, the key name the holder. */
  apiKeys?: { secretName: string };
  /** Callers besides the capsules that name this one (always trusted) whose trust header is honoured: `apikey:<holder>` or `system:serviceaccount:<ns>:<name>`. */
  trustedCallers?: string[];
}

/**
 * The capsule's durable store (`mur serve --store`). One of:
 * - `embedded: {}` (the default): a SQLite file on the session volume (an emptyDir: it survives
 *   container restarts, not pod deletion); one replica only;
 * - `postgres`: a PostgreSQL server shared by every replica; the URL (credentials included) comes
 *   from a Secret as the env var MURMUR_STORE, and `address` is where the server is, for the
 *   egress NetworkPolicy (the operator never reads the URL).
 */
export interface StoreSpec {
  /** `{}`: the SQLite file on the session emptyDir; `volumeClaim`: on a PVC `<capsule>-store` (survives pod deletion, so the capsule can sleep). */
  embedded?: { volumeClaim?: StoreVolumeClaim };
  postgres?: { urlSecretRef: { name: string; key: string }; address: string };
}

/** The PersistentVolumeClaim `<capsule>-store` (ReadWriteOnce) the embedded store lives on. */
export interface StoreVolumeClaim {
  /** Default: the cluster's default StorageClass. */
  storageClassName?: string;
  /** Requested size; default spec.workdirSizeLimit, else 1Gi. */
  size?: string;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface CapsuleStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  replicas?: number;
  readyReplicas?: number;
  a2aUrl?: string;
  configHash?: string;
  /** Label selector of the capsule's pods (string form), for the /scale subresource (HPA, kubectl scale). */
  selector?: string;
  /** Token usage scraped from the pods' /metrics (operator/usage/); written by the scraper only. */
  usage?: CapsuleUsage;
  /** What `kubectl get capsules` shows as State (the Ready condition stays as it is). */
  phase?: CapsulePhase;
  /** While asleep (and since the last wake): written by the operator's sleep controller. */
  sleep?: CapsuleSleepStatus;
}

export type CapsulePhase = 'Pending' | 'Ready' | 'Sleeping' | 'Waking' | 'Failed';

export interface CapsuleSleepStatus {
  /** When the capsule was put to sleep (RFC 3339); absent while awake. */
  since?: string;
  /** When the last wake was requested (RFC 3339). */
  lastWake?: string;
  /** The agent card JSON fetched from a ready pod right before sleeping (at most 32 KiB), served by the activator while asleep. */
  agentCard?: string;
  /**
   * HMAC-SHA256 under the activator key of each API key in the Secret of `spec.a2a.auth.apiKeys`
   * (hex, sorted; runtime/contracts/api-key.ts): how the activator checks a bearer API key before
   * waking the capsule. Kept while the capsule may sleep, absent otherwise.
   */
  apiKeyDigests?: string[];
}

export interface CapsuleUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** When the pods were scraped for these totals (RFC 3339). */
  observedAt: string;
  /** Pods scraped successfully for these totals. */
  pods: number;
}

export interface Capsule extends KubeObject {
  spec: CapsuleSpec;
  status?: CapsuleStatus;
}

export interface HookSpec {
  artifact: { name: string; version?: string; source?: ArtifactSource };
  binding?: Handler;
  execution_mode?: ExecutionMode;
  commit_policy?: CommitPolicy;
  on_overflow?: 'drop' | 'block';
}

export interface HookStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  /** Capsules in the Hook's namespace whose spec.hooks name it, sorted (at most HOOK_USED_BY_MAX). */
  usedBy?: string[];
  usedByCount?: number;
}

export interface Hook extends KubeObject {
  spec: HookSpec;
  status?: HookStatus;
}

/** What the operator keeps of a Secret: never its values. */
export interface SecretInfo {
  name: string;
  resourceVersion: string;
  keys: string[];
  /**
   * The API-key digests of its values (runtime/contracts/api-key.ts), when the operator has an
   * activator key: the values themselves are never kept.
   */
  apiKeyDigests?: string[];
}
