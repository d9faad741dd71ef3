/**
 * Host-side token counting (cl100k_base), off the event loop.
 *
 * Counting runs in one worker thread (token-worker.ts): the text is cut into chunks (chunk.ts,
 * linear, defines the count) and each chunk is counted by the count-only BPE encoder
 * (bpe-count.ts, exact against js-tiktoken). The worker is started on the first count or by
 * {@link TokenCounter.prewarm} when a session opens, so building the encoder never costs the first
 * provider request time on the main thread, and a 10 MiB tool result is counted while `/healthz`,
 * sockets and timers keep running.
 *
 * The main thread keeps no counted text: a request is posted (a copy) and only numbers come back.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { ChunkOptions } from './chunk.ts';
import type { CountReply, CountRequest } from './token-worker.ts';

export { chunkText, DEFAULT_MAX_CHUNK, DEFAULT_MAX_RUN, type ChunkOptions, type ChunkStats } from './chunk.ts';

export interface TokenCounterOptions extends ChunkOptions {
  /** Chunk counts the worker memoises (by digest; default 32 768). 0 disables the memo. */
  memoEntries?: number;
}

// The generic worker boot (registers tsx when running from sources), on layer 0 beside errors.ts:
// runtime/worker-boot.mjs, shared with the component host's workers.
const BOOT = fileURLToPath(new URL('../worker-boot.mjs', import.meta.url));
const ENTRY = new URL(import.meta.url.endsWith('.ts') ? './token-worker.ts' : './token-worker.js', import.meta.url).href;

export class TokenCounter {
  readonly #opts: TokenCounterOptions;
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (n: number[]) => void; reject: (e: Error) => void }>();

  constructor(opts: TokenCounterOptions = {}) {
    this.#opts = opts;
  }

  /** Starts the worker and its encoder build now (a session calls this when it opens). */
  prewarm(): void {
    this.#start();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const w = new Worker(BOOT, {
      workerData: { entry: ENTRY, chunk: { maxChunk: this.#opts.maxChunk, maxRun: this.#opts.maxRun }, memoEntries: this.#opts.memoEntries ?? 32_768 },
      // Bounds the worker's heap: a chunked 10 MiB text and the rank table fit well inside. The
      // young generation is held to 6 MiB: building the encoder grew V8's default one to ≈ 16 MiB
      // that then stayed resident for the life of the process (heap 30 → 18 MiB measured).
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 6 },
      env: {},
      execArgv: [], // no loaders or heap flags of the parent: worker-boot registers tsx itself
    });
    let ready!: () => void;
    this.#ready = new Promise<void>((r) => (ready = r));
    w.on('message', (m: CountReply) => {
      if (m.id === 0) return ready();
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(`token counting failed: ${m.error}`));
      else p.resolve(m.counts!);
      if (this.#pending.size === 0) w.unref();
    });
    const fail = (e: Error) => {
      this.#worker = undefined;
      for (const p of this.#pending.values()) p.reject(new Error(`token counting worker stopped: ${e.message}`));
      this.#pending.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`exit code ${code}`)));
    // An idle counter never keeps a process alive.
    w.unref();
    this.#worker = w;
    return w;
  }

  /** Resolves once the encoder is built (tests and benches wait on it; counting does not need to). */
  async ready(): Promise<void> {
    const w = this.#start();
    w.ref(); // an unref'd worker would let the process exit with this wait unsettled
    await this.#ready;
    if (this.#pending.size === 0) w.unref();
  }

  /** Tokens in each text, in order (one round trip). */
  countMany(texts: string[]): Promise<number[]> {
    if (texts.every((t) => t === '')) return Promise.resolve(texts.map(() => 0));
    const w = this.#start();
    const id = this.#next++;
    return new Promise<number[]>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      w.ref();
      w.postMessage({ id, texts } satisfies CountRequest);
    });
  }

  /** Tokens in `text`. */
  async count(text: string): Promise<number> {
    return (await this.countMany([text]))[0]!;
  }

  /** Tokens in the JSON serialisation of `value` (how the reference counts a payload). */
  countJson(value: unknown): Promise<number> {
    return this.count(JSON.stringify(value) ?? '');
  }

  /** Stops the worker (pending counts reject). */
  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = undefined;
    if (w) await w.terminate();
  }
}

let sharedCounter: TokenCounter | undefined;
/** The process-wide counter with the default options and memo. */
export function tokenCounter(): TokenCounter {
  sharedCounter ??= new TokenCounter();
  return sharedCounter;
}

export function countTokens(text: string): Promise<number> {
  return tokenCounter().count(text);
}
