/**
 * The `murmur:hook/lifecycle@0.9.0` records as jco hands them across (camelCase fields, variants as
 * `{tag, val}`, `option<T>` = value | undefined, u64 = bigint), and what a staged hook is.
 */
import type { CommitPolicy, Handler } from '../contracts/commit-table.ts';
import type { CompactionOutcome, Decision, HookMessage, HookServices } from './port.ts';

export type { CompactionOutcome, Decision, HookMessage, HookServices };

export type ContextInsertion = 'replace-context' | 'seed-context';

export interface ToolManifest {
  binaryName: string;
  content: string;
}

export type HookOutput =
  | { tag: 'none' }
  | { tag: 'replace-context'; val: HookMessage[] }
  | { tag: 'write-manifests'; val: ToolManifest[] }
  | { tag: 'artifact'; val: string }
  | { tag: 'reopen-task'; val: string }
  | { tag: 'seed-context'; val: HookMessage[] }
  | { tag: 'deny'; val: string };

export interface SessionContext {
  capsuleName: string;
  capsuleVersion: string;
  sessionId: string;
  model: string;
  capabilities: string[];
}

export interface StageEvent {
  shellAllow: string[];
}

export interface TaskStartEvent {
  taskId: string;
  contextId: string;
  /** `a2a` or `task_md`. */
  source: string;
  inputBytes: bigint;
  /** floor(context.max_tokens * context.seed_budget); 0 = not computed. */
  budgetTokens: bigint;
  /** context.max_tokens, or 0 when the manifest has no context block. */
  contextWindow: bigint;
  /** Tokens of history loaded under `conversation: threaded`; 0 otherwise. */
  priorTokens: bigint;
}

export interface TaskEndEvent {
  taskId: string;
  exitStatus: string;
}

export interface InferenceEvent {
  turn: number;
  inputTokens: bigint;
  outputTokens: bigint;
  decision: string;
  toolName?: string | undefined;
  prompt?: string | undefined;
  output?: string | undefined;
  tools?: string | undefined;
}

export interface ToolOutcome {
  outputBytes: bigint;
  durationMs: bigint;
  status: string;
}

export interface ToolEvent {
  turn: number;
  toolName: string;
  inputBytes: bigint;
  /** The exact input JSON of the call. */
  input: string;
  /** undefined: the decision point. set: the observation. */
  outcome?: ToolOutcome | undefined;
}

export interface ShellOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutBytes: bigint;
  stderrBytes: bigint;
  durationMs: bigint;
}

export interface ShellEvent {
  turn: number;
  binary: string;
  command: string;
  argv: string[];
  script?: string | undefined;
  recipe?: string | undefined;
  outcome?: ShellOutcome | undefined;
}

export interface CompactionEvent {
  messages: HookMessage[];
  sessionTokens: bigint;
  threshold: number;
  model?: string | undefined;
  systemPrompt?: string | undefined;
}

export interface SessionEndEvent {
  totalTurns: number;
  totalInputTokens: bigint;
  totalOutputTokens: bigint;
  totalToolCalls: number;
  totalShellCalls: number;
  durationMs: bigint;
  exitStatus: string;
}

/** A hook as the capsule staged it: its component, its contract, its grant. */
export interface StagedHook {
  /** The artifact name; also names `logs/hook-<name>.log`. */
  name: string;
  wasmPath: string;
  /** Pin checked at load (hex, `sha256:` prefix allowed). */
  sha256?: string;
  /** Undefined = every session event except `on-stage`. */
  binding?: Handler;
  executionMode: 'blocking' | 'async';
  commitPolicy: CommitPolicy;
  /** Async hooks: what a full queue does with a new event. Default `drop`. */
  onOverflow?: 'drop' | 'block';
  /** Per handler call; default 30 000 ms. */
  deadlineMs?: number;
  /** Linear memory cap; default DEFAULT_LIMITS.memoryBytes. */
  memoryBytes?: number;
  /** Host directory preopened as `/`; none by default. */
  preopen?: string;
  networkAllow?: string[];
  env?: Record<string, string>;
  grants?: { taskIoRead?: boolean; conversationRead?: boolean };
}
