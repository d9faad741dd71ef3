/**
 * What the agent loop asks of the hooks. The HookBus (runtime/hooks/bus.ts) implements it; a capsule
 * without hooks gets NO_HOOKS. Event records are the WIT records in jco's camelCase.
 */
export type HookMessage = { role: string; content: string; id?: string; sourceId?: string; insertedBy?: 'replace-context' | 'seed-context' };

export type Decision = { allowed: true } | { allowed: false; hook: string; reason: string; agentMessage: string };

export type CompactionOutcome =
  | { kind: 'none' }
  | { kind: 'replaced'; hook: string; messages: HookMessage[] }
  | { kind: 'invalid'; hook: string; reason: string }
  | { kind: 'fatal'; hook: string; exitStatus: 'failed' | 'spend_ceiling_reached'; message: string };

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
