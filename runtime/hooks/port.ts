/**
 * The hook contract between the agent loop and the hooks: what the loop asks of the hooks (HookPort),
 * and what the runtime offers hook components (HookServices). The HookBus (runtime/hooks/bus.ts)
 * implements HookPort; a capsule without hooks gets NO_HOOKS; the session (runtime/loop/session.ts)
 * implements HookServices. A leaf of hooks/: the loop and telemetry import it downward, and it
 * imports nothing. Event records are the WIT records in jco's camelCase.
 */
export type HookMessage = { role: string; content: string; id?: string; sourceId?: string; insertedBy?: 'replace-context' | 'seed-context' };

export type Decision = { allowed: true } | { allowed: false; hook: string; reason: string; agentMessage: string };

export type CompactionOutcome =
  | { kind: 'none' }
  | { kind: 'replaced'; hook: string; messages: HookMessage[] }
  | { kind: 'invalid'; hook: string; reason: string }
  | { kind: 'fatal'; hook: string; exitStatus: 'failed' | 'spend_ceiling_reached'; message: string };

/** What the runtime offers hook components (murmur:runtime/inference, tokens, task-io, conversation). */
export interface HookServices {
  runInference(req: { messages: HookMessage[]; systemPrompt?: string; model?: string }, hookName: string): Promise<{ text: string; modelUsed: string; inputTokens: bigint; outputTokens: bigint }>;
  countTokens(text: string): number;
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
