/**
 * The hook contract between the agent loop and the hooks: what the loop asks of the hooks (HookPort),
 * and what the runtime offers hook components (HookServices). The HookBus (runtime/hooks/bus.ts)
 * implements HookPort; a capsule without hooks gets NO_HOOKS; the session (runtime/loop/capsule-session.ts)
 * implements HookServices. A leaf of hooks/: the loop and telemetry import it downward, and it
 * imports only the commit table. Event records are the WIT records in jco's camelCase.
 */
import { COMMIT_TABLE, HANDLERS, type Arm, type Handler } from '../contracts/commit-table.ts';

export type HookMessage = { role: string; content: string; id?: string; sourceId?: string; insertedBy?: 'replace-context' | 'seed-context' };

export type Decision = { allowed: true } | { allowed: false; hook: string; reason: string; agentMessage: string };

export type CompactionOutcome =
  | { kind: 'none' }
  | { kind: 'replaced'; hook: string; messages: HookMessage[] }
  | { kind: 'invalid'; hook: string; reason: string }
  | { kind: 'fatal'; hook: string; exitStatus: 'failed' | 'spend_ceiling_reached'; message: string };

/** What the runtime offers hook components (murmur:runtime/inference, tokens, task-io, conversation). */
export interface HookServices {
  runInference(
    req: { messages: HookMessage[]; systemPrompt?: string; model?: string },
    hookName: string,
  ): Promise<{ text: string; modelUsed: string; inputTokens: bigint; outputTokens: bigint }>;
  countTokens(text: string): number | Promise<number>;
  taskIo(): { input?: { asGiven: string; original: string }; output?: string } | undefined;
  conversation(): HookMessage[];
}

export interface HookPort {
  sessionStart(ctx: Record<string, unknown>): Promise<void>;
  taskStart(ev: Record<string, unknown>): Promise<{ messages: HookMessage[] }>;
  inference(ev: Record<string, unknown>): Promise<string[]>;
  toolDecision(ev: Record<string, unknown>): Promise<Decision>;
  toolObserved(ev: Record<string, unknown>): Promise<void>;
  shellDecision(ev: Record<string, unknown>): Promise<Decision>;
  shellObserved(ev: Record<string, unknown>): Promise<void>;
  compaction(ev: Record<string, unknown>): Promise<CompactionOutcome>;
  taskEnd(ev: Record<string, unknown>): Promise<{ reopen?: { hook: string; feedback: string } }>;
  sessionEnd(ev: Record<string, unknown>): Promise<void>;
  drain(budgetMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The HookPort methods that dispatch a handler (all but drain and close). */
export type DispatchMethod = Exclude<keyof HookPort, 'drain' | 'close'>;

export type Phase = 'decision' | 'observation';

/**
 * The handler each dispatch method dispatches, and what its answer committed: the handler's
 * committed arm (COMMIT_TABLE) when `commits(answer)`, else `none`. A handler with a decision point
 * (COMMIT_TABLE `decisionPointOnly`) has two methods, one per phase; every other session handler has
 * one (on-stage is staging's, not the loop's). test/hooks/port.test.ts holds this to the table.
 */
export const PORT_METHODS: Readonly<Record<DispatchMethod, { handler: Handler; phase?: Phase; commits: (answer: unknown) => boolean }>> = {
  sessionStart: { handler: 'on-session-start', commits: () => false },
  taskStart: { handler: 'on-task-start', commits: (r) => ((r as { messages?: unknown[] })?.messages?.length ?? 0) > 0 },
  inference: { handler: 'on-inference', commits: (r) => Array.isArray(r) && r.length > 0 },
  toolDecision: { handler: 'on-tool-call', phase: 'decision', commits: (r) => (r as Decision)?.allowed === false },
  toolObserved: { handler: 'on-tool-call', phase: 'observation', commits: () => false },
  shellDecision: { handler: 'on-shell', phase: 'decision', commits: (r) => (r as Decision)?.allowed === false },
  shellObserved: { handler: 'on-shell', phase: 'observation', commits: () => false },
  compaction: { handler: 'on-compaction', commits: (r) => (r as CompactionOutcome)?.kind === 'replaced' },
  taskEnd: { handler: 'on-task-end', commits: (r) => (r as { reopen?: unknown })?.reopen !== undefined },
  sessionEnd: { handler: 'on-session-end', commits: () => false },
};

/** What a dispatch method's answer committed: the handler's arm from the commit table, or `none`. */
export function committedArm(method: DispatchMethod, answer: unknown): Arm {
  const m = PORT_METHODS[method];
  return m.commits(answer) ? COMMIT_TABLE[m.handler].committedArm : 'none';
}

/** The handlers the loop dispatches through a HookPort: every handler but on-stage. */
export const PORT_HANDLERS: readonly Handler[] = HANDLERS.filter((h) => h !== 'on-stage');

const ALLOW: Decision = { allowed: true };

export const NO_HOOKS: HookPort = {
  sessionStart: async () => {},
  taskStart: async () => ({ messages: [] }),
  inference: async () => [],
  toolDecision: async () => ALLOW,
  toolObserved: async () => {},
  shellDecision: async () => ALLOW,
  shellObserved: async () => {},
  compaction: async () => ({ kind: 'none' }),
  taskEnd: async () => ({}),
  sessionEnd: async () => {},
  drain: async () => {},
  close: async () => {},
};
