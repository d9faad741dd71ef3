/**
 * Where a session keeps its conversation beyond its own process: the durable record behind
 * `murmur:conversation/read` and the history of each threaded context. The session holds the
 * newest part in memory (bounded, see session.ts) and reads the store only for what it does not
 * hold: at open (the record) and for a context it has no history of (after a restart, or once the
 * context was evicted). Implemented over the A2A store's database (runtime/a2a/store/conversation-table.ts); here, below both the loop and a2a, so neither imports the other.
 *
 * Every message belongs to the caller whose task produced it (its owner), and a threaded history
 * is the owner's and the context id's together: a client-chosen context id ("support-chat") is
 * guessable, so two callers sending the same one must never share a conversation (issue 38 §1).
 */
import type { ConversationMessage } from './wire.ts';

/**
 * Whose conversation: the A2A caller's owner scope, exactly as the SDK's task stores scope tasks
 * (the call's tenant and `resolveUserScope` of its user; runtime/a2a/tasks/task-record.ts `callerOwner`).
 */
export interface ConversationOwner {
  readonly tenant: string;
  readonly user: string;
}

/**
 * The owner of tasks no A2A caller sent (`mur run`'s task), and of a store's rows written before
 * messages had owners whose caller cannot be told (murmur-schema.ts, migration 0003). No A2A
 * caller is ever this owner: the SDK names a caller without a user name `unknown`, never ''.
 */
export const NO_CALLER: ConversationOwner = Object.freeze({ tenant: '', user: '' });

/** A message of the record with the owner of the task that produced it. */
export interface OwnedMessage {
  owner: ConversationOwner;
  message: ConversationMessage;
}

/** One string per owner, for maps and comparisons (JSON: no separator a user name could forge). */
export function ownerId(o: ConversationOwner): string {
  return JSON.stringify([o.tenant, o.user]);
}

/** One string per threaded conversation: the owner's and the context id's together. */
export function threadKey(o: ConversationOwner, contextId: string): string {
  return JSON.stringify([o.tenant, o.user, contextId]);
}

export interface ConversationStore {
  /**
   * Other writers append to the same store (replicas on one PostgreSQL server): a context's
   * history this process holds may miss their tasks, so every threaded task reads it from the store.
   */
  readonly shared?: boolean;
  /** The newest messages of the record (every owner's), oldest first, at most `maxMessages` and `maxBytes`. */
  loadRecord(maxMessages: number, maxBytes: number): Promise<OwnedMessage[]>;
  /** `owner`'s history in a context, oldest first, at most `maxBytes` (the newest messages that fit). */
  loadContext(owner: ConversationOwner, contextId: string, maxBytes: number): Promise<ConversationMessage[]>;
  /**
   * Shared stores: the messages other writers appended since this store's last loadRecord or
   * othersSince, oldest first (at most `maxMessages` and `maxBytes`), so a replica's record also
   * holds the tasks the other replicas ran.
   */
  othersSince?(maxMessages: number, maxBytes: number): Promise<OwnedMessage[]>;
  /** Append messages of a finished task of `owner` to the record, under its context. */
  append(owner: ConversationOwner, contextId: string, messages: readonly ConversationMessage[]): Promise<void>;
}
