/**
 * The runtime-provided `delegate-task` tool: lets the model hand a sub-task to a peer capsule.
 * Offered only when `capabilities.network.allow` names at least one peer. Sends the task,
 * follows it to a terminal state or `input-required`, and returns the peer's result text;
 * bounded by `lifecycle.delegation_deadline_secs` (default 600), after which the peer task is
 * canceled (best effort) and the tool returns an error result.
 */
import { destinationOf, isAllowed } from '../../net/allowlist.ts';
import type { PeerTask } from './client.ts';
import { isTerminal, type TaskState, type TaskTrust } from '../core/executor.ts';

export const DELEGATE_TASK_TOOL = 'delegate-task';
export const DEFAULT_DELEGATION_DEADLINE_SECS = 600;

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the tool input. */
  inputSchema: Record<string, unknown>;
}

export interface DelegateContext {
  /** The capsule's `capabilities.network.allow`. */
  allow: readonly string[];
  /** Trust class of the task that calls the tool (propagated; never upgraded). */
  trust: TaskTrust;
  traceparent?: string;
  /** lifecycle.delegation_deadline_secs; default 600. */
  deadlineSecs?: number;
  /** Aborts the delegation (e.g. the calling task's ctx.signal). The peer task is then canceled. */
  signal?: AbortSignal;
  /** Per-HTTP-call timeout; default 30 s (never more than what is left of the deadline). */
  callTimeoutMs?: number;
  /** This capsule's credential for a peer (see credentials.ts), sent as a bearer token. */
  credentials?: (peerUrl: string) => string | undefined;
}

export interface DelegateResult {
  /** True when the tool result should be shown to the model as an error. */
  isError: boolean;
  /** What the model sees. */
  text: string;
  taskId?: string;
  state?: TaskState;
}

/**
 * Allowlist entries that name a peer: the capsule's own entries, minus those a component claims —
 * an entry some artifact's own grant also lists (a tool's API, the driver's provider) or that lets
 * through the inference endpoint. A capsule whose allowlist only serves its tools and driver is not
 * offered delegate-task, and no API host is advertised to the model as a peer.
 */
export function peersFromAllow(allow: readonly string[], claimed: { entries?: readonly string[]; endpoint?: string } = {}): string[] {
  const taken = new Set((claimed.entries ?? []).map((e) => e.trim().toLowerCase()));
  const endpoint = claimed.endpoint ? destinationOf(claimed.endpoint) : undefined;
  return allow.map((a) => a.trim()).filter((a) => a !== '' && !taken.has(a.toLowerCase()) && !(endpoint && isAllowed([a], endpoint)));
}

/** The tool definition, or undefined when the allowlist names no peers (the tool is not offered). */
export function delegateTaskTool(allow: readonly string[], claimed: { entries?: readonly string[]; endpoint?: string } = {}): ToolDefinition | undefined {
  const peers = peersFromAllow(allow, claimed);
  if (peers.length === 0) return undefined;
  return {
    name: DELEGATE_TASK_TOOL,
    description:
      'Delegate a self-contained task to a peer agent and wait for its result. ' +
      `Allowed peers: ${peers.join(', ')}. The peer sees only the task text you give it.`,
    inputSchema: {
      type: 'object',
      properties: {
        peer: { type: 'string', description: 'Base URL of the peer agent, e.g. http://summarizer:7001' },
        task: { type: 'string', description: 'The complete task for the peer, in plain language' },
      },
      required: ['peer', 'task'],
      additionalProperties: false,
    },
  };
}

function normalisePeer(peer: string): string {
  const p = peer.trim();
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(p) ? p : `http://${p}`;
}

function outcome(peer: string, t: PeerTask): DelegateResult {
  const base = { taskId: t.taskId, state: t.state };
  if (t.state === 'completed') return { ...base, isError: false, text: t.text ?? '' };
  if (t.state === 'input-required') {
    return { ...base, isError: false, text: `peer '${peer}' needs input (task ${t.taskId}): ${t.statusText ?? ''}` };
  }
  return { ...base, isError: true, text: `peer '${peer}' task ${t.taskId} ${t.state}${t.statusText ? `: ${t.statusText}` : ''}` };
}

/** Run one `delegate-task` call. Never throws. */
export async function runDelegateTask(input: unknown, ctx: DelegateContext): Promise<DelegateResult> {
  const i = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  if (typeof i.peer !== 'string' || i.peer.trim() === '' || typeof i.task !== 'string' || i.task.trim() === '') {
    return { isError: true, text: 'delegate-task needs {peer: string, task: string}, both non-empty' };
  }
  const peerUrl = normalisePeer(i.peer);
  const deadlineMs = (ctx.deadlineSecs ?? DEFAULT_DELEGATION_DEADLINE_SECS) * 1000;
  const end = Date.now() + deadlineMs;
  const callTimeout = () => Math.max(1, Math.min(ctx.callTimeoutMs ?? 30_000, end - Date.now()));
  const bearer = ctx.credentials?.(peerUrl);
  const common = {
    peerUrl,
    allow: ctx.allow,
    trust: ctx.trust,
    ...(bearer ? { bearer } : {}),
    ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  };
  // The SDK's client loads with the first delegation, not with every serving process (its bundle
  // is ≈ 0.5 MiB of source on the main heap; the image's bundle keeps it in a chunk of its own).
  const { cancelTask, followTask, sendMessage } = await import('./client.ts');
  const sent = await sendMessage({ ...common, text: i.task, timeoutMs: callTimeout() });
  if (!sent.ok) return { isError: true, text: sent.error };
  if (isTerminal(sent.state) || sent.state === 'input-required') return outcome(peerUrl, sent);
  const followed = await followTask({ ...common, taskId: sent.taskId, deadlineMs: Math.max(0, end - Date.now()), timeoutMs: ctx.callTimeoutMs ?? 30_000 });
  const stop = async (why: string): Promise<DelegateResult> => {
    // Best effort, and outside the caller's signal so an aborted caller still cancels the peer.
    const { signal: _s, ...rest } = common;
    await cancelTask({ ...rest, taskId: sent.taskId, timeoutMs: 5_000 });
    return { isError: true, taskId: sent.taskId, text: `${why}; peer task ${sent.taskId} was canceled` };
  };
  if (ctx.signal?.aborted) return stop('delegation aborted');
  if (!followed.ok) return { isError: true, taskId: sent.taskId, text: followed.error };
  if (followed.timedOut) {
    return stop(`delegation deadline of ${deadlineMs / 1000}s exceeded (last state: ${followed.state})`);
  }
  return outcome(peerUrl, followed);
}
