/** Hooks: the commit table, the HookBus the agent loop calls, and the message helpers. */
export * from '../contracts/commit-table.ts';
export { readHookOutput } from './output.ts';
export { planSeed, fitSummary, type SeedPlan, type SeedResult } from './seed.ts';
export {
  HookBus,
  safeBinaryName,
  DEFAULT_QUEUE_DEPTH,
  DEFAULT_DRAIN_BUDGET_MS,
  DEFAULT_SEED_OVERFLOW_MARGIN,
  REQUIRED_HANDLERS,
  LIFECYCLE_VERSION,
  type HookBusOptions,
} from './bus.ts';
export { mintMessageId, stripBookkeeping, validateToolPairs, adoptHookMessages } from './messages.ts';
export { utf8Window, MAX_PAGE } from './imports.ts';
export type * from './types.ts';
export { busHookFrom, type HookGrantOptions } from './staged.ts';
