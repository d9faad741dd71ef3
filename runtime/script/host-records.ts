/**
 * The records the script capsule's runtime-host interfaces exchange (as jco lifts and lowers
 * them), and the task a capsule run belongs to. Apart from host.ts so that the host's helpers
 * (mcp.ts) can name them without importing the host back.
 */
import type { TaskTrust } from '../a2a/core/executor.ts';

/** `tool-input` as jco lifts it. */
export interface WitToolInput {
  data?: string;
  logPath?: string;
}

/** `tool-result` as jco lowers it. */
export interface WitToolResult {
  status: 'passed' | 'failed' | 'error';
  summary: string | undefined;
  data: string | undefined;
  dataPath: string | undefined;
  truncated: boolean;
  metadata: [string, string][];
}

export interface WitShellResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  truncated: boolean;
  fullOutputPath: string | undefined;
}

export interface WitMessage {
  messageId: string;
  contextId?: string;
  text: string;
}

export interface WitTaskResult {
  taskId: string;
  contextId: string;
  state: string;
}

/**
 * Where a task's side channels go while it runs as an A2A task (all optional; without them chunks
 * are dropped and a tool's request-input fails at once).
 */
export interface ScriptTaskIo {
  /** A tool's `murmur:text/chunks` emit-chunk. */
  textChunk?(s: string): void;
  thinkingChunk?(s: string): void;
  /** A tool's `murmur:task/task` request-input: resolves with the reply. */
  requestInput?(prompt: string): Promise<string>;
  /** One per invoke: `{name: 'tool-call', data: {tool, status, duration_ms, caller: 'capsule'}}`. */
  artifact?(a: { name: string; data?: unknown; text?: string }): void;
}

/** The task a capsule run belongs to (for trust stamping, trace fields and its side channels). */
export interface HostTask {
  taskId: string;
  contextId: string;
  trust: TaskTrust;
  signal: AbortSignal;
  io?: ScriptTaskIo;
}

export interface Totals {
  toolCalls: number;
  shellCalls: number;
  a2aSends: number;
  pulls: number;
}
