/**
 * Host-side token counting (cl100k_base), never stalling the event loop.
 *
 * The text is cut into chunks (chunk.ts, linear, defines the count) and each chunk is counted by
 * the count-only BPE encoder (bpe-count.ts, exact against js-tiktoken). Its rank tables are built
 * once, in a worker thread (token-worker.ts: parsing the ranks costs ≈ 0.1–0.5 s and ≈ 40 MB of
 * short-lived allocations that would stay in the main thread's heap), started on the first count or
 * by {@link TokenCounter.prewarm} when a session opens; the worker hands them back in shared memory.
 * Then:
 * - a request of at most {@link INLINE_MAX_CHARS} characters (a turn's messages, a tool call, an
 *   answer: nearly all of them) is counted here, in place: a few milliseconds at most, no round trip;
 * - a larger one (a 10 MiB tool result) goes to the worker, so `/healthz`, sockets and timers keep
 *   running while it is counted. The worker is let go after `MURMUR_TOKEN_WORKER_IDLE_MS` (10 s)
 *   without work — an isolate of its own is ≈ 17 MiB of a pod's RSS (measured) — and started again,
 *   with the same tables and nothing to build, when the next large text comes.
 * Both paths count the same chunks with the same encoder, so a text counts the same either way.
 *
 * The main thread keeps no counted text: a request to the worker is posted (a copy) and only
 * numbers come back.
 *
 * The tables are kept in a file too (bpe-table-file.ts; the worker writes it once it has built
 * them): a counter whose file is there reads it on the main thread (one 3.9 MiB read and a digest,
 * milliseconds) instead of starting a worker to build them, and lets go of the tables after
 * `MURMUR_TOKEN_TABLES_IDLE_MS` (30 s) without a count — they are ≈ 4 MiB of an idle pod's RSS —
 * reading them back with the next count.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { envNonNegative } from '../env-number.ts';
import { noteLetGo, releaseWhenSettled } from '../memory.ts';
import { IdleTimer } from '../idle-timer.ts';
import { cl100kCounter, type BpeCounter, type Cl100kTables } from './bpe-count.ts';
import { checkTablesFile, readTablesFile, seedTablesFiles, tablesFile } from './bpe-table-file.ts';
import { countChunked, type ChunkOptions } from './chunk.ts';
import type { CountReply, CountRequest } from './token-worker.ts';

export { chunkText, DEFAULT_MAX_CHUNK, DEFAULT_MAX_RUN, type ChunkOptions, type ChunkStats } from './chunk.ts';

/**
 * Requests up to this many characters (all texts together) are counted on the calling thread:
 * at the counter's slowest measured rate (≈ 2 MiB/s of UTF-8, random code points, unwarmed code)
 * that is under 10 ms of the event loop.
 */
export const INLINE_MAX_CHARS = 16 * 1024;

export interface TokenCounterOptions extends ChunkOptions {
  /** Chunk counts the worker memoises (by digest; default 32 768). 0 disables the memo. */
  memoEntries?: number;
  /** The worker is let go after this long without a count (ms; default 10 000; 0 = keep it). */
  idleMs?: number;
  /** Called when an idle worker has been let go (diagnostics, tests). */
  onIdleStop?: () => void;
  /**
   * The rank-table file (bpe-table-file.ts): read instead of building, written by the worker that
   * builds. Default: none (tables are built by a worker and kept); the process-wide counter uses
   * `tablesFile()`.
   */
  tablesFile?: string;
  /** Read-only tables files tried after `tablesFile` (bpe-table-file.ts: seedTablesFiles); never written. */
  seedTablesFiles?: string[];
  /**
   * With a tables file: the tables are let go after this long without a count (ms; default 30 000;
   * 0 = keep them), and read from the file again by the next count.
   */
  tablesIdleMs?: number;
  /** Called when the tables' idle time ran out: `dropped`, or kept (no sound file to read them back from). Diagnostics, tests. */
  onTablesIdle?: (dropped: boolean) => void;
}

/** MURMUR_TOKEN_WORKER_IDLE_MS, or the default; anything but a number of ms ≥ 0 is refused by name. */
export function tokenWorkerIdleMs(env: NodeJS.ProcessEnv = process.env): number {
  return envNonNegative(env, 'MURMUR_TOKEN_WORKER_IDLE_MS', 10_000, {
    code: 'E-RUN-032',
    unit: 'milliseconds',
    hint: 'set how long the token-counting worker may sit idle before it is let go (default 10000), or 0 to keep it',
  });
}

/** MURMUR_TOKEN_TABLES_IDLE_MS, or the default; anything but a number of ms ≥ 0 is refused by name. */
export function tokenTablesIdleMs(env: NodeJS.ProcessEnv = process.env): number {
  return envNonNegative(env, 'MURMUR_TOKEN_TABLES_IDLE_MS', 30_000, {
    code: 'E-RUN-035',
    unit: 'milliseconds',
    hint: 'set how long the token counter may keep its rank tables without a count before it lets them go (default 30000; they are read back from their file by the next count), or 0 to keep them',
  });
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
  /** The rank tables, once the first worker built them (shared memory), and a counter over them here. */
  #tables: Cl100kTables | undefined;
  #inline: BpeCounter | undefined;
  /** Lets the worker go after the idle time with nothing to count (once the tables are here). */
  readonly #idle: IdleTimer;
  /** Lets the tables go after the idle time without a count (with a file to read them back from). */
  readonly #tablesIdle: IdleTimer;
  /** Where the tables can be read from: the writable file, then the seeds. */
  readonly #files: string[];
  /** Workers started so far, rank tables built so far (tests: a restart builds nothing), and read from the file. */
  workersStarted = 0;
  tablesBuilt = 0;
  tablesRead = 0;
  /** Times idle tables were let go. */
  tablesDropped = 0;

  constructor(opts: TokenCounterOptions = {}) {
    this.#opts = opts;
    this.#idle = new IdleTimer(opts.idleMs ?? 10_000, () => this.#workerIdle());
    this.#files = [...(opts.tablesFile ? [opts.tablesFile] : []), ...(opts.seedTablesFiles ?? [])];
    this.#tablesIdle = new IdleTimer(this.#files.length ? (opts.tablesIdleMs ?? 30_000) : 0, () => this.#tablesIdled());
  }

  /** Whether a worker is running now (tests, diagnostics). */
  get workerRunning(): boolean {
    return this.#worker !== undefined;
  }

  /** Whether small requests are counted here (the tables have arrived). */
  get countsInline(): boolean {
    return this.#inline !== undefined;
  }

  /**
   * Gets the tables ready now (a session calls this when it opens): read from the tables file when
   * it is there, else built by the worker, started now.
   */
  prewarm(): void {
    if (!this.#inline && !this.#readTables()) this.#start();
  }

  /** Takes the tables from the first sound file (the writable one, then the seeds); whether it did. */
  #readTables(): boolean {
    if (this.#inline) return true;
    for (const f of this.#files) {
      const t = readTablesFile(f);
      if (typeof t === 'string') continue;
      this.tablesRead++;
      this.#useTables(t);
      return true;
    }
    return false;
  }

  #useTables(t: Cl100kTables): void {
    this.#tables = t;
    this.#inline = cl100kCounter(t);
    this.#tablesIdle.touch();
  }

  /** The tables' idle time ran out: let them go, unless a worker (which holds them too) runs or counts. */
  #tablesIdled(): void {
    if (this.#worker || this.#pending.size) {
      this.#tablesIdle.touch();
      return;
    }
    if (!this.#readable()) {
      this.#opts.onTablesIdle?.(false);
      return;
    }
    this.#tables = undefined;
    this.#inline = undefined;
    this.tablesDropped++;
    this.#opts.onTablesIdle?.(true);
    releaseWhenSettled('token tables');
  }

  /** Whether a tables file is there to read the tables back from (else they are kept). */
  #readable(): boolean {
    return this.#files.some((f) => checkTablesFile(f) === undefined);
  }

  #start(): Worker {
    this.#idle.cancel();
    if (this.#worker) return this.#worker;
    this.workersStarted++;
    const w = new Worker(BOOT, {
      workerData: {
        entry: ENTRY,
        chunk: { maxChunk: this.#opts.maxChunk, maxRun: this.#opts.maxRun },
        memoEntries: this.#opts.memoEntries ?? 32_768,
        tables: this.#tables,
        tablesFile: this.#opts.tablesFile,
      },
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
      if (m.id === -1) {
        this.tablesBuilt++;
        this.#useTables(m.tables!);
        return;
      }
      if (m.id === 0) {
        ready();
        this.#idleCheck(w);
        return;
      }
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(`token counting failed: ${m.error}`));
      else p.resolve(m.counts!);
      if (this.#pending.size === 0) w.unref();
      this.#idleCheck(w);
    });
    const fail = (e: Error) => {
      if (this.#worker !== w) return; // a worker let go on purpose
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

  /** Resolves once the encoder is built and warmed (tests and benches wait on it; counting does not need to). */
  async ready(): Promise<void> {
    const w = this.#start();
    w.ref(); // an unref'd worker would let the process exit with this wait unsettled
    await this.#ready;
    if (this.#pending.size === 0) w.unref();
  }

  /**
   * Lets the worker go once it has had nothing to do for the idle time, if the tables are here
   * (a worker stopped before it built them would only have to build them again).
   */
  #idleCheck(w: Worker): void {
    if (this.#pending.size || !this.#tables || this.#worker !== w) return;
    this.#idle.touch();
  }

  #workerIdle(): void {
    const w = this.#worker;
    if (!w || this.#pending.size) return;
    this.#worker = undefined;
    this.#ready = undefined;
    void w.terminate().then(() => {
      this.#opts.onIdleStop?.();
      noteLetGo('token worker');
    });
  }

  /** Tokens in each text, in order. */
  countMany(texts: string[]): Promise<number[]> {
    if (texts.every((t) => t === '')) return Promise.resolve(texts.map(() => 0));
    // Tables let go while idle come back from their file (or, without it, from the worker below).
    if (!this.#inline && !this.#worker) this.#readTables();
    const inline = this.#inline;
    if (inline) {
      // Every inline count restarts the running countdown in place.
      this.#tablesIdle.touch();
      let chars = 0;
      for (const t of texts) chars += t.length;
      if (chars <= INLINE_MAX_CHARS) {
        try {
          return Promise.resolve(texts.map((t) => this.#countHere(inline, t)));
        } catch (e) {
          return Promise.reject(new Error(`token counting failed: ${e instanceof Error ? e.message : String(e)}`));
        }
      }
    }
    const w = this.#start();
    const id = this.#next++;
    return new Promise<number[]>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      w.ref();
      w.postMessage({ id, texts } satisfies CountRequest);
    });
  }

  /** The worker's count of one text (token-worker.ts), without its memo: small texts only. */
  #countHere(counter: BpeCounter, text: string): number {
    return countChunked(text, this.#opts, (c) => counter.count(c));
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
    this.#idle.cancel();
    this.#tablesIdle.cancel();
    const w = this.#worker;
    this.#worker = undefined;
    for (const p of this.#pending.values()) p.reject(new Error('token counting worker stopped: the counter was closed'));
    this.#pending.clear();
    if (w) await w.terminate();
  }
}

let sharedCounter: TokenCounter | undefined;
/** The process-wide counter with the default options and memo. */
export function tokenCounter(): TokenCounter {
  sharedCounter ??= new TokenCounter({
    idleMs: tokenWorkerIdleMs(),
    tablesFile: tablesFile(),
    seedTablesFiles: seedTablesFiles(),
    tablesIdleMs: tokenTablesIdleMs(),
  });
  return sharedCounter;
}

export function countTokens(text: string): Promise<number> {
  return tokenCounter().count(text);
}
