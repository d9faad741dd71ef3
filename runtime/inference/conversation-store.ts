/**
 * Where a session keeps its conversation beyond its own process: the durable record behind
 * `murmur:conversation/read` and the history of each threaded context. The session holds the
 * newest part in memory (bounded, see session.ts) and reads the store only for what it does not
 * hold: at open (the record) and for a context it has no history of (after a restart, or once the
 * context was evicted). Implemented over the A2A store's database (runtime/a2a/conversation-table.ts); here, below both the loop and a2a, so neither imports the other.
 */
import type { ConversationMessage } from './wire.ts';

export interface ConversationStore {
  /**
   * Other writers append to the same store (replicas on one PostgreSQL server): a context's
   * history this process holds may miss their tasks, so every threaded task reads it from the store.
   */
  readonly shared?: boolean;
  /** The newest messages of the record, oldest first, at most `maxMessages` and `maxBytes`. */
  loadRecord(maxMessages: number, maxBytes: number): Promise<ConversationMessage[]>;
  /** A context's history, oldest first, at most `maxBytes` (the newest messages that fit). */
  loadContext(contextId: string, maxBytes: number): Promise<ConversationMessage[]>;
  /**
   * Shared stores: the messages other writers appended since this store's last loadRecord or
   * othersSince, oldest first (at most `maxMessages` and `maxBytes`), so a replica's record also
   * holds the tasks the other replicas ran.
   */
  othersSince?(maxMessages: number, maxBytes: number): Promise<ConversationMessage[]>;
  /** Append messages of a finished task to the record, under its context. */
  append(contextId: string, messages: readonly ConversationMessage[]): Promise<void>;
}
