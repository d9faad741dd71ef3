/**
 * The session's two conversation bounds as pure structures (runtime/loop/conversation-bounds.ts):
 * the record keeps the newest messages within a count and a byte bound, the threaded histories at
 * most a byte total with the least recently used context going first — each with a running total,
 * so a task no longer rescans everything held (issue 18). The whole-session behaviour is
 * conversation-bounds.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { BoundedHistories, BoundedRecord, dropFromFront, messageBytes } from '../../runtime/loop/conversation-bounds.ts';
import type { ConversationMessage } from '../../runtime/inference/wire.ts';

/** A message of exactly `bytes` bytes as messageBytes counts them (its content's JSON, 27 + the text, plus 64). */
function msg(label: string, bytes = 100): ConversationMessage {
  const m: ConversationMessage = { role: 'user', content: [{ type: 'text', text: `${label}:`.padEnd(bytes - 64 - 27, 'x') }] };
  expect(messageBytes(m)).toBe(bytes);
  return m;
}
const labels = (ms: readonly ConversationMessage[]): string[] => ms.map((m) => String((m.content[0] as { text: string }).text.split(':')[0]));
const sum = (ms: readonly ConversationMessage[]): number => ms.reduce((n, m) => n + messageBytes(m), 0);

describe('dropFromFront: how many of the oldest go', () => {
  it.each([
    // sizes, maxCount, maxBytes, drop, kept total
    { sizes: [], maxCount: 3, maxBytes: 10, drop: 0, total: 0 },
    { sizes: [1, 2, 3], maxCount: 3, maxBytes: 10, drop: 0, total: 6 },
    { sizes: [1, 2, 3, 4], maxCount: 3, maxBytes: 100, drop: 1, total: 9 },
    { sizes: [5, 5, 5], maxCount: 10, maxBytes: 10, drop: 1, total: 10 },
    { sizes: [5, 5, 6], maxCount: 10, maxBytes: 10, drop: 2, total: 6 },
    { sizes: [1, 1, 20], maxCount: 10, maxBytes: 10, drop: 3, total: 0 },
    { sizes: [9, 1, 1, 1], maxCount: 2, maxBytes: 10, drop: 2, total: 2 },
  ])('sizes $sizes within $maxCount messages and $maxBytes bytes: drop $drop, keep $total bytes', ({ sizes, maxCount, maxBytes, drop, total }) => {
    const all = sizes.reduce((n, s) => n + s, 0);
    const read: number[] = [];
    const sizeAt = (i: number): number => {
      read.push(i);
      return sizes[i]!;
    };
    expect(dropFromFront(sizes.length, sizeAt, all, maxCount, maxBytes)).toEqual({ drop, total });
    // Only the sizes of the messages that go are read.
    expect(read).toEqual(Array.from({ length: drop }, (_, i) => i));
  });
});

describe('BoundedRecord', () => {
  it('keeps the newest messages within the count bound, oldest first, with the total of what it holds', () => {
    const r = new BoundedRecord(3, 1 << 20);
    r.push([msg('a'), msg('b')]);
    r.push([msg('c'), msg('d'), msg('e')]);
    expect(labels(r.messages)).toEqual(['c', 'd', 'e']);
    expect(r.totalBytes).toBe(sum(r.messages));
  });

  it('keeps the newest messages that fit the byte bound; a message larger than the bound is not kept at all', () => {
    const r = new BoundedRecord(100, 1000);
    r.push([msg('a', 400), msg('b', 400)]);
    r.push([msg('c', 400)]);
    expect(labels(r.messages)).toEqual(['b', 'c']);
    expect(r.totalBytes).toBe(sum(r.messages));
    r.push([msg('huge', 2000)]);
    expect(r.messages).toEqual([]);
    expect(r.totalBytes).toBe(0);
  });

  it('agrees with summing everything held after each of many pushes', () => {
    const r = new BoundedRecord(50, 5000);
    for (let i = 0; i < 300; i++) {
      r.push([msg(`m${i}`, 100 + ((i * 37) % 400)), msg(`n${i}`, 100)]);
      expect(r.totalBytes).toBe(sum(r.messages));
      expect(r.totalBytes).toBeLessThanOrEqual(5000);
      expect(r.messages.length).toBeLessThanOrEqual(50);
    }
    expect(labels(r.messages).at(-1)).toBe('n299');
  });
});

describe('BoundedHistories', () => {
  it('evicts the least recently used contexts past the byte total, never the one just stored', () => {
    const h = new BoundedHistories(1000);
    h.keep('A', [msg('a1', 400)]);
    h.keep('B', [msg('b1', 400)]);
    h.keep('A', [msg('a1', 400), msg('a2', 100)]); // A is the most recent now
    expect(h.totalBytes).toBe(900);
    h.keep('C', [msg('c1', 300)]);
    expect(h.get('B')).toBeUndefined();
    expect(labels(h.get('A')!)).toEqual(['a1', 'a2']);
    expect(labels(h.get('C')!)).toEqual(['c1']);
    expect(h.totalBytes).toBe(800);
    h.keep('D', [msg('d1', 5000)]);
    expect(h.get('A')).toBeUndefined();
    expect(h.get('C')).toBeUndefined();
    expect(labels(h.get('D')!)).toEqual(['d1']);
    expect(h.totalBytes).toBe(5000);
  });
});
