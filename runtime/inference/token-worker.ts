/**
 * The token-counting thread: builds the cl100k tables (≈ 0.1–0.5 s) and hands them to the main
 * thread (shared memory), warms its counter, and counts chunk by chunk the texts too large to count
 * in place (runtime/inference/tokens.ts),
 * off the runtime's event loop, so neither the build nor a 10 MiB tool result ever stalls
 * `/healthz`, sockets or timers.
 *
 * Chunk counts are memoised by a digest of the chunk, never by the chunk itself: a key that was a
 * slice would pin the whole string it was cut from. Bounded by entries (a digest and a number,
 * ≈ 100 bytes each).
 */
import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { cl100kCounter, type Cl100kTables } from './bpe-count.ts';
import { buildCl100kTables } from './bpe-tables.ts';
import { checkTablesFile, writeTablesFile } from './bpe-table-file.ts';
import { countChunked, type ChunkOptions } from './chunk.ts';

export interface CountRequest {
  id: number;
  texts: string[];
}
export interface CountReply {
  /** 0: built and warmed (ready); -1: the tables just built (`tables`), for the main thread to keep. */
  id: number;
  counts?: number[];
  error?: string;
  tables?: Cl100kTables;
}

const opts = (workerData?.chunk ?? {}) as ChunkOptions;
const memoEntries: number = workerData?.memoEntries ?? 32_768;
// A worker started again after an idle stop gets the tables the first one built (shared memory).
const given = workerData?.tables as Cl100kTables | undefined;
const tables = given ?? buildCl100kTables();
if (!given) {
  parentPort!.postMessage({ id: -1, tables } satisfies CountReply);
  // Kept for the next process (and for this one, after it lets them go while idle): tokens.ts reads
  // the file instead of building. A write that fails (a read-only volume) only means they are kept.
  const file = workerData?.tablesFile as string | undefined;
  if (file && checkTablesFile(file) !== undefined) writeTablesFile(file, tables);
}
const counter = cl100kCounter(tables);
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
  return countChunked(text, opts, countChunk);
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
/**
 * JIT warm-up: V8 needs about a megabyte of counting before the counter runs fully optimised code
 * (measured: the first 256 KiB of base64 at a quarter of the steady rate, the next few at half), so
 * once built the worker counts a fixed mixed sample (base64, code points of every plane, prose),
 * slice by slice between requests (setImmediate: a request never waits behind more than one
 * slice), then reports ready (counting never waits for that; tests and benches do). Nothing of
 * the sample is kept.
 */
function warmUpSlices(): string[] {
  let seed = 0x9e3779b9;
  const rnd = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
  const bytes = Buffer.alloc(48 * 1024);
  for (let i = 0; i < bytes.length; i++) bytes[i] = rnd(256);
  const base64 = bytes.toString('base64');
  let points = '';
  while (points.length < 32 * 1024) {
    const cp = rnd(4) === 0 ? 0x10000 + rnd(0x20000) : rnd(0x10000);
    points += cp >= 0xd800 && cp < 0xe000 ? ' ' : String.fromCodePoint(cp);
  }
  const prose = 'The model\'s answer isn\'t final: it\'s 42 tokens, they\'ll say — "héllo", 日本語 😀.\r\n\t  {"k": [1, 2]}\n'.repeat(400);
  const slices: string[] = [];
  for (const t of [base64, points, prose]) for (let i = 0; i < t.length; i += 8192) slices.push(t.slice(i, i + 8192));
  return slices;
}
const warm = warmUpSlices();
const warmStep = (k: number): void => {
  if (k >= warm.length) {
    warm.splice(0);
    parentPort!.postMessage({ id: 0, counts: [] } satisfies CountReply); // ready
    return;
  }
  countChunked(warm[k]!, opts, (c) => counter.count(c));
  setImmediate(warmStep, k + 1);
};
setImmediate(warmStep, 0);
