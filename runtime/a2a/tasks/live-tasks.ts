/**
 * Which finished tasks stay in memory (the task machine's live table; the task store keeps every
 * one of them, and `tasks/get` answers from it once a task has left memory).
 *
 * Bounded by count and by size: a count alone let 1 000 finished tasks of 100 KiB hold 100 MiB of
 * message text in the main heap (measured in a heap snapshot under bench/soak.ts: 137 finished
 * tasks kept 13.7 MiB of input text beside the 65 queued and running ones). Pure, so the rule is a
 * table test (test/a2a/live-tasks.test.ts).
 */
import type { Artifact, Message, Part } from '@a2a-js/sdk';

export interface LiveBounds {
  /** Finished tasks kept in memory at most. */
  maxTasks: number;
  /** Bytes of content (see `retainedBytes`) the finished tasks in memory keep at most. */
  maxBytes: number;
}

/** The default size bound: room for the last 40 tasks of 100 KiB, or 4 000 of 1 KiB (the count bound holds first). */
export const DEFAULT_MAX_LIVE_BYTES = 4 * 1024 * 1024;

/**
 * The content a part keeps in memory, approximately: a string's length (V8 holds a Latin-1 string
 * at one byte per character, others at two), a file's bytes, a data value's JSON length.
 */
export function partBytes(p: Part): number {
  const c = p.content;
  if (!c) return 0;
  switch (c.$case) {
    case 'text':
    case 'url':
      return c.value.length;
    case 'raw':
      return c.value.byteLength;
    case 'data':
      try {
        return JSON.stringify(c.value ?? null)?.length ?? 0;
      } catch {
        return 0; // a cycle: not from the wire (JSON has none), and nothing to size
      }
  }
  return 0;
}

const partsBytes = (parts: readonly Part[]): number => parts.reduce((n, p) => n + partBytes(p), 0);

/** What a finished task keeps: its history, its artifacts and its status message. */
export function retainedBytes(t: { history: readonly Message[]; artifacts: readonly Artifact[]; statusMessage: Message | undefined }): number {
  let n = t.statusMessage ? partsBytes(t.statusMessage.parts) : 0;
  for (const m of t.history) n += partsBytes(m.parts);
  for (const a of t.artifacts) n += partsBytes(a.parts);
  return n;
}

export interface LiveEntry {
  readonly id: string;
  readonly final: boolean;
  /** Streams open on it: a task with one is never dropped (its subscriber still reads it). */
  readonly subscribers: number;
  /** retainedBytes once it finished (0 while it runs). */
  readonly bytes: number;
}

/**
 * The ids to drop, oldest first (`live` in insertion order), until at most `maxTasks` finished
 * tasks keeping at most `maxBytes` remain. Running, queued and waiting tasks are never dropped and
 * do not count against either bound; a finished task with a subscriber is kept and counts.
 * `totals` are the finished tasks' count and bytes (what finishedTotals sums; the task machine
 * keeps them as tasks finish and leave), so `live` is read once, and only as far as needed.
 */
export function evictions(live: Iterable<LiveEntry>, b: LiveBounds, totals: { tasks: number; bytes: number }): string[] {
  let { tasks, bytes } = totals;
  const out: string[] = [];
  const within = (): boolean => tasks <= b.maxTasks && bytes <= b.maxBytes;
  if (within()) return out;
  // Oldest first, stopping as soon as both bounds hold: the caller's iterator can be lazy.
  for (const e of live) {
    if (!e.final || e.subscribers > 0) continue;
    out.push(e.id);
    tasks--;
    bytes -= e.bytes;
    if (within()) break;
  }
  return out;
}

/** The finished entries' count and bytes. */
export function finishedTotals(live: Iterable<LiveEntry>): { tasks: number; bytes: number } {
  let tasks = 0;
  let bytes = 0;
  for (const e of live) {
    if (!e.final) continue;
    tasks++;
    bytes += e.bytes;
  }
  return { tasks, bytes };
}
