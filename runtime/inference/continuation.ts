/**
 * Stateful driver continuation (wit-interfaces.md "Stateful driver continuation"):
 *
 * | Situation                                          | What the runtime does                              |
 * |----------------------------------------------------|----------------------------------------------------|
 * | driver returns a non-empty `continuation_id`       | hold the id for the rest of the session loop       |
 * | next turn, same `context_id`                       | send only the messages appended since the driver   |
 * |                                                    | last acknowledged state, plus the held id          |
 * | next turn, different `context_id`                  | full resend — never reused across unrelated tasks  |
 * | driver omits the key or returns ""                 | drop the held id; next turn is a full resend       |
 * | a hook commits `replace-context` (compaction)      | drop the held id; next turn resends the new history|
 *
 * Token accounting never looks at the plan: it always counts the full conversation.
 *
 * Usage per turn:
 *   const sent = history.length;
 *   const plan = state.plan(contextId, history);          // build the request from plan.messages
 *   ...dispatch, append the assistant message to history...
 *   state.acknowledge(contextId, metadataContinuationId, history, sent);
 *
 * What the driver's id covers is what it was SENT, not the reply it returned: the reference runtime
 * records the length before the reply, so the next delta starts with the assistant's own turn (a
 * tool result never arrives without the tool call it answers).
 */
export type PlanReason =
  /** No id held: full resend. */
  | 'no-held-id'
  /** Same context, id held: only the delta plus the id. */
  | 'continued'
  /** The held id belongs to another context: dropped, full resend. */
  | 'context-changed'
  /**
   * The history no longer starts with what the driver acknowledged (shorter, or messages put ahead
   * of it: a new task's seed-context, an unthreaded task reusing the context id): dropped, full resend.
   */
  | 'history-diverged';

export interface ContinuationPlan<M> {
  /** The messages to put in the request. */
  messages: M[];
  /** Present only when the request continues provider-side state. */
  continuationId?: string;
  /** True when `messages` is the whole history. */
  full: boolean;
  reason: PlanReason;
}

interface Held {
  id: string;
  contextId: string;
  /** How many history messages the driver's provider-side state already covers. */
  acked: number;
  /** The last of them, by identity: the history must still hold it at the same place to continue. */
  last: unknown;
}

export class ContinuationState {
  #held: Held | undefined;

  /** The id currently held, if any. */
  get heldId(): string | undefined {
    return this.#held?.id;
  }

  /** The context the held id belongs to, if any. */
  get heldContextId(): string | undefined {
    return this.#held?.contextId;
  }

  /** What to send this turn for `contextId`, given the full conversation `history`. */
  plan<M>(contextId: string, history: readonly M[]): ContinuationPlan<M> {
    const held = this.#held;
    if (held === undefined) return { messages: [...history], full: true, reason: 'no-held-id' };
    if (held.contextId !== contextId) {
      this.#held = undefined;
      return { messages: [...history], full: true, reason: 'context-changed' };
    }
    if (history.length < held.acked || history[held.acked - 1] !== held.last) {
      this.#held = undefined;
      return { messages: [...history], full: true, reason: 'history-diverged' };
    }
    return { messages: history.slice(held.acked), continuationId: held.id, full: false, reason: 'continued' };
  }

  /**
   * Record what the driver returned in `metadata.continuation_id` after a turn for `contextId`.
   * A non-empty id is held, covering the first `sentLength` messages of `history` — the length the
   * request was built from, before the assistant reply was appended — so the next delta starts with
   * that reply. An omitted (`undefined`) or empty id drops whatever was held. The id outlives the
   * task: the next task of the same context continues it when its history still starts with these
   * messages (a threaded conversation), and resends in full otherwise.
   */
  acknowledge<M>(contextId: string, continuationId: string | undefined, history: readonly M[], sentLength: number): void {
    if (continuationId === undefined || continuationId === '' || sentLength <= 0 || sentLength > history.length) {
      this.#held = undefined;
      return;
    }
    this.#held = { id: continuationId, contextId, acked: sentLength, last: history[sentLength - 1] };
  }

  /** A hook committed `replace-context`: the provider-side state no longer matches the history. */
  replaceContext(): void {
    this.#held = undefined;
  }

  /** Drop the held id for any other reason (a driver failure). */
  drop(): void {
    this.#held = undefined;
  }
}
