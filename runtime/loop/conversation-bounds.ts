/**
 * The two byte bounds on what a session keeps of its conversations (issue 13 §4): the
 * conversation record (`murmur:conversation/read`: the newest messages within a count and a byte
 * bound) and the threaded histories of all contexts (at most a byte total, the least recently used
 * context going first).
 *
 * Why running totals: both bounds were checked by summing every message held after each task, a
 * scan that grows with the record up to its 5 000 messages — in a CPU profile of `mur serve` over
 * 420 tasks (≈ 1 700 messages held by the end) it was already 70 ms of the main thread's samples
 * (issue 18). Each structure now adds a message's size once when it arrives and subtracts it when
 * it leaves.
 */
import type { ConversationMessage } from '../inference/wire.ts';

/** Approximate bytes a message holds (its content as JSON), memoised per message object. */
const sizes = new WeakMap<ConversationMessage, number>();
export function messageBytes(m: ConversationMessage): number {
  let n = sizes.get(m);
  if (n === undefined) {
    n = Buffer.byteLength(JSON.stringify(m.content) ?? '') + 64;
    sizes.set(m, n);
  }
  return n;
}

/**
 * How many of the oldest messages must go so that at most `maxCount` remain and the rest hold at
 * most `maxBytes`: the longest suffix within both bounds is kept (a single message over
 * `maxBytes` is not kept at all). Pure: `count` messages, `sizeAt(i)` the size of the i-th oldest,
 * `total` their sum; only the sizes of the messages that go are read.
 */
export function dropFromFront(
  count: number,
  sizeAt: (i: number) => number,
  total: number,
  maxCount: number,
  maxBytes: number,
): { drop: number; total: number } {
  let drop = Math.max(0, count - maxCount);
  for (let i = 0; i < drop; i++) total -= sizeAt(i);
  while (drop < count && total > maxBytes) total -= sizeAt(drop++);
  return { drop, total };
}

/** The newest messages within a count and a byte bound, oldest first. */
export class BoundedRecord {
  private items: ConversationMessage[] = [];
  private bytes = 0;

  constructor(
    private readonly maxCount: number,
    private readonly maxBytes: number,
  ) {}

  /** Appends `messages` (oldest first) and drops the oldest past either bound. */
  push(messages: readonly ConversationMessage[]): void {
    for (const m of messages) {
      this.items.push(m);
      this.bytes += messageBytes(m);
    }
    if (this.items.length <= this.maxCount && this.bytes <= this.maxBytes) return;
    // Only the messages that go are sized again (memoised): a record at its count bound would
    // otherwise map all 5 000 on every task, the scan the running total is there to avoid.
    const { drop, total } = dropFromFront(this.items.length, (i) => messageBytes(this.items[i]!), this.bytes, this.maxCount, this.maxBytes);
    this.items.splice(0, drop);
    this.bytes = total;
  }

  get messages(): readonly ConversationMessage[] {
    return this.items;
  }

  /** The bytes the record holds (messageBytes summed). */
  get totalBytes(): number {
    return this.bytes;
  }
}

/** Threaded histories by context, at most `maxBytes` in all; Map order is recency. */
export class BoundedHistories {
  private readonly held = new Map<string, { history: ConversationMessage[]; bytes: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(contextId: string): ConversationMessage[] | undefined {
    return this.held.get(contextId)?.history;
  }

  /**
   * Stores `history` as the context's latest (the most recently used), then evicts the least
   * recently used contexts while the total is over the bound — never the one just stored.
   */
  keep(contextId: string, history: ConversationMessage[]): void {
    const prev = this.held.get(contextId);
    if (prev) {
      this.bytes -= prev.bytes;
      this.held.delete(contextId);
    }
    let bytes = 0;
    for (const m of history) bytes += messageBytes(m);
    this.held.set(contextId, { history, bytes });
    this.bytes += bytes;
    for (const [id, h] of this.held) {
      if (this.bytes <= this.maxBytes || id === contextId) break;
      this.bytes -= h.bytes;
      this.held.delete(id);
    }
  }

  /** The bytes all held histories hold (messageBytes summed). */
  get totalBytes(): number {
    return this.bytes;
  }
}
