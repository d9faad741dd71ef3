/**
 * The token-counting thread: builds the cl100k counter (≈ 0.1–0.5 s) and counts chunk by chunk,
 * off the runtime's event loop, so neither the build nor a 10 MiB tool result ever stalls
 * `/healthz`, sockets or timers.
 *
 * Chunk counts are memoised by a digest of the chunk, never by the chunk itself: a key that was a
 * slice would pin the whole string it was cut from. Bounded by entries (a digest and a number,
 * ≈ 100 bytes each).
 */
import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { buildCl100kCounter } from './bpe-count.ts';
import { chunkText, type ChunkOptions } from './chunk.ts';

export interface CountRequest {
  id: number;
  texts: string[];
}
export interface CountReply {
  id: number;
  counts?: number[];
  error?: string;
}

const opts = (workerData?.chunk ?? {}) as ChunkOptions;
const memoEntries: number = workerData?.memoEntries ?? 32_768;
const counter = buildCl100kCounter();
const memo = new Map<string, number>();

function countChunk(chunk: string): number {
  if (chunk.length < 64) return counter.count(chunk); // cheaper than a digest
  const key = createHash('sha1').update(chunk).digest('base64');
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const n = counter.count(chunk);
  if (memo.size >= memoEntries) memo.delete(memo.keys().next().value as string);
  memo.set(key, n);
  return n;
}

function count(text: string): number {
  let n = 0;
  for (const c of chunkText(text, opts)) n += countChunk(c);
  return n;
}

parentPort!.on('message', (req: CountRequest) => {
  let reply: CountReply;
  try {
    reply = { id: req.id, counts: req.texts.map(count) };
  } catch (e) {
    reply = { id: req.id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
parentPort!.postMessage({ id: 0, counts: [] } satisfies CountReply); // ready
