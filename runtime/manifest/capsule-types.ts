/**
 * The typed capsule manifest (camelCase fields; see capsule.ts for parsing and the naming rule).
 * Its own file so the checks (capsule-checks.ts) and the parser (capsule.ts) share it without an import circle.
 */
import type { CommitPolicy, ExecutionMode, Handler } from '../contracts/commit-table.ts';
import type { McpConfig } from './mcp.ts';
import type { ArtifactRuntime } from './schema.ts';

export interface Limits {
  memoryBytes: number;
  deadlineSeconds: number;
  hookDeadlineSeconds: number;
}

export interface Capabilities {
  network: { allow: string[] };
  /** `scope` is `.` (whole workdir) unless narrowed. */
  filesystem: { scope: string };
  /** Absent = no shell tool. */
  shell?: { allow: string[]; stripEnv: string[] };
  env: { allow: string[] };
  limits: Limits;
}

/** A per-artifact grant exactly as declared (no defaults: absent parts inherit / deny). */
export interface ArtifactCapabilities {
  network?: { allow?: string[] };
  filesystem?: { scope?: string };
  shell?: { allow: string[]; stripEnv?: string[] };
  env?: { allow?: string[] };
  limits?: Partial<Limits>;
  /** Hooks: `murmur:task-io/read` granted. */
  taskIo?: { read?: boolean };
  /** Hooks: `murmur:conversation/read` granted. */
  conversation?: { read?: boolean };
}

export interface ArtifactSource {
  url: string;
  sha256: string;
}

export interface ArtifactEntry {
  name: string;
  /** `source: {oci: ...}`: a digest-pinned Wasm OCI artifact (then `source` is absent). */
  oci?: string;
  /** Absent only for `source` artifacts (then taken from the fetched artifact). */
  version?: string;
  runtime: ArtifactRuntime;
  source?: ArtifactSource;
  capabilities?: ArtifactCapabilities;
  /** Hooks only; `drop` unless declared. Undefined for other runtimes. */
  onOverflow?: 'drop' | 'block';
  config?: Record<string, unknown>;
  /**
   * Hooks only: the contract the capsule expects (as declared, no defaults). A component without a
   * murmur.yaml of its own (bare `.wasm`, OCI) gets it as its derived manifest's contract; an
   * artifact with its own must agree with it (staging, E-REG-017).
   */
  binding?: Handler;
  executionMode?: ExecutionMode;
  commitPolicy?: CommitPolicy;
}

export interface Compaction {
  threshold: number;
  model?: string;
  systemPrompt?: string;
  systemPromptFile?: string;
  dumpSummaries: boolean;
}

export interface Inference {
  driver: { artifact: string; config?: Record<string, unknown> };
  model: string;
  endpoint?: string;
  /** Always `http` once validated (`process` is refused). */
  transport: 'http';
  /** Literal key or `${VAR}` reference, resolved at driver start. */
  apiKey?: string;
  maxTurns: number;
  maxTokens: number;
  maxSessionTokens?: number;
  systemPrompt?: string;
  systemPromptFile?: string;
  compaction: Compaction;
}

export interface Context {
  maxTokens?: number;
  seedBudget: number;
  seedOverflowMargin: number;
}

export interface Lifecycle {
  taskAcceptance: 'none' | 'single' | 'queue';
  queueDepth: number;
  inputTimeoutSecs?: number;
  conversation: 'stateless' | 'threaded';
  maxTaskReopens: number;
  delegationDeadlineSecs: number;
}

export interface Observability {
  /** Undefined when absent or empty. */
  otelEndpoint?: string;
  otelHeaders: Record<string, string>;
  metricsPort?: number;
}

export interface CapsuleManifest {
  name: string;
  version: string;
  artifacts: ArtifactEntry[];
  capabilities: Capabilities;
  /** Absent = script capsule. */
  inference?: Inference;
  context: Context;
  lifecycle: Lifecycle;
  observability: Observability;
  trace: { includeToolOutput: boolean };
  /** This runtime's extension: the MCP servers the capsule may use (docs/mcp.md). */
  mcp?: McpConfig;
  /** `agent` when `inference` is present, else `script`. */
  kind: 'agent' | 'script';
  /** The file it was parsed from (as given to parseManifest / the absolute path from loadManifest). */
  file: string;
  /** The capsule directory (loadManifest only). */
  dir?: string;
}
