/**
 * Message bookkeeping at the hook boundary. runtime/hooks/conversation.ts translates between
 * conversation messages and the hook `message` record; these are the pieces the bus adds: minting,
 * stripping and the tool-pair check, re-exported in one place.
 */
import type { ConversationMessage } from '../inference/wire.ts';
import { mintMessageId, toolPairProblem } from '../inference/messages.ts';
import { fromHookMessages } from './conversation.ts';
import type { ContextInsertion, HookMessage } from './types.ts';

export { mintMessageId };

/** The keys that are runtime bookkeeping, in both spellings (WIT/jco and conversation). */
const BOOKKEEPING = new Set(['id', 'source-id', 'sourceId', 'inserted-by', 'insertedBy']);

/**
 * Copies of `messages` without `id`, `source-id` and `inserted-by` (either spelling): what may go
 * into a driver payload. Never mutates its input.
 */
export function stripBookkeeping<T extends object>(messages: readonly T[]): T[] {
  return messages.map((m) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m)) if (!BOOKKEEPING.has(k)) out[k] = v;
    return out as T;
  });
}

/**
 * Checks that every tool call in `messages` is answered by exactly one following tool result and
 * every tool result answers a call. Accepts conversation messages or hook messages (translated
 * first; a hook message the wire cannot carry is itself a problem).
 */
export function validateToolPairs(messages: readonly (ConversationMessage | HookMessage)[]): { ok: true } | { ok: false; reason: string } {
  let conv: ConversationMessage[];
  try {
    conv = messages.every((m) => typeof m.content === 'string')
      ? fromHookMessages(messages as readonly HookMessage[], 'replace-context')
      : messages.map((m) => (typeof m.content === 'string' ? fromHookMessages([m as HookMessage], 'replace-context')[0]! : (m as ConversationMessage)));
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  const problem = toolPairProblem(conv);
  return problem === undefined ? { ok: true } : { ok: false, reason: problem };
}

/**
 * Messages the runtime builds from a hook's list: a fresh `msg_<uuid>` id for each (a hook's own id
 * is replaced), `source-id` verbatim (absent when the hook set none), `inserted-by` set.
 */
export function adoptHookMessages(list: readonly HookMessage[], insertedBy: ContextInsertion): HookMessage[] {
  return list.map((m) => {
    const out: HookMessage = { role: m.role, content: m.content, id: mintMessageId(), insertedBy };
    if (m.sourceId !== undefined) out.sourceId = m.sourceId;
    return out;
  });
}
