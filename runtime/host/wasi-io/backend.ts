/**
 * The I/O behind preview2-shim's WASI streams, pollables, clocks, files and outgoing HTTP, served in
 * the component's own thread. The shim hands every such operation to `ioCall(call, id, payload)`,
 * which it implements with a second worker thread per importing thread (its "I/O worker") and a
 * synchronous round trip to it for each call. Measured in `mur serve`: 16 round trips per provider
 * request at 0.3–2.5 ms each under load (11 ms a request), and ≈ 8 MiB of RSS per component for
 * that thread. Here a call is a function call: stream and poll state lives in this thread, files
 * are read and written with synchronous fs calls, clocks are deadlines, and only HTTP leaves the
 * thread, once per request (net-client.ts → the main thread's net-relay.ts).
 *
 * The call numbers and the shapes of payloads and results are the shim's protocol (its
 * io/calls.js, io/worker-thread.js), which the worker bundle plugs this into (bundle.ts); this
 * module takes the call table as an argument so it holds no import of the shim's internals.
 * Raw sockets are never granted (runtime/host/wasi.ts): their calls, and anything else this does
 * not serve, fail with an error naming the call.
 */
import { hrtime } from 'node:process';
import { Files } from './files.ts';
import type { NetClient, Exchange } from './net-client.ts';
import type { HttpErrorCode } from './net-protocol.ts';
import { concat, takeBytes } from './chunk-queue.ts';

/** The shim's call numbers (its io/calls.js exports, by name). */
export type CallTable = Record<string, number>;

/** How much an output stream accepts per write (the guest asks with check-write first). */
const WRITE_BUDGET = 1 << 20;
const CLOSED = { tag: 'closed' };
/** What a poll on timers alone sleeps on, in a thread with no outgoing HTTP (nothing ever wakes it early). */
const SLEEP = new Int32Array(new SharedArrayBuffer(4));

type Stream =
  | { kind: 'empty' }
  | { kind: 'discard' }
  | { kind: 'file-in'; file: number; pos: number }
  | { kind: 'file-out'; file: number; pos: number }
  | { kind: 'http-out'; chunks: Uint8Array[]; written: bigint; contentLength: bigint | undefined; finished: boolean; request?: PendingRequest }
  | { kind: 'http-in'; exchange: Exchange; rid: number };

type Poll = { kind: 'ready' } | { kind: 'timer'; at: bigint } | { kind: 'future'; future: Future } | { kind: 'stream'; stream: Stream };

interface PendingRequest {
  payload: HttpRequestPayload;
  future: Future;
}

interface Future {
  rid?: number;
  exchange?: Exchange;
  /** Set when the request could not be sent at all. */
  failed?: HttpErrorCode;
  /** The body stream the request waits for (sent once it is finished). */
  body?: Extract<Stream, { kind: 'http-out' }>;
  taken: boolean;
}

interface HttpRequestPayload {
  method: string;
  scheme: string;
  authority: string;
  pathWithQuery: string;
  headers: [string, string][];
  body: number | null | undefined;
  connectTimeout?: bigint;
  betweenBytesTimeout?: bigint;
  firstByteTimeout?: bigint;
}

export interface IoBackendOptions {
  /** The route for outgoing HTTP; none until the worker has its channel (a request then fails). */
  net: () => NetClient | undefined;
}

export class IoBackend {
  readonly #c: CallTable;
  readonly #names: Map<number, string>;
  readonly #net: () => NetClient | undefined;
  readonly #files = new Files();
  readonly #streams = new Map<number, Stream>();
  readonly #polls = new Map<number, Poll>();
  readonly #futures = new Map<number, Future>();
  readonly #fileCalls: Set<number>;
  // The shim's stdout and stderr streams are ids 1 and 2 (its I/O worker creates them first).
  #nextStream = 2;
  #nextPoll = 0;
  #nextFuture = 0;

  constructor(calls: CallTable, opts: IoBackendOptions) {
    this.#c = calls;
    this.#names = new Map(
      Object.entries(calls)
        .filter(([k]) => !k.endsWith('MASK') && k !== 'CALL_SHIFT')
        .map(([k, v]) => [v, k]),
    );
    this.#net = opts.net;
    this.#fileCalls = new Set(
      Object.entries(calls)
        .filter(([k]) => k.startsWith('FILESYSTEM_DESCRIPTOR_'))
        .map(([, v]) => v),
    );
    this.#streams.set(1, { kind: 'discard' });
    this.#streams.set(2, { kind: 'discard' });
  }

  /** A name for a call number, as the shim spells it (for errors). */
  name(call: number): string {
    const c = this.#c;
    const op = this.#names.get(call & c.CALL_MASK!) ?? `call ${call >>> 24}`;
    const type = call & c.CALL_TYPE_MASK!;
    return type ? `${op}|${this.#names.get(type) ?? type}` : op;
  }

  call(call: number, id: number | null, payload: unknown): unknown {
    const c = this.#c;
    const op = call & c.CALL_MASK!;
    switch (call) {
      case c.INPUT_STREAM_CREATE! | c.STDIN!:
        return this.#addStream({ kind: 'empty' });
      case c.INPUT_STREAM_CREATE! | c.FILE!: {
        const p = payload as { descriptorId: number; offset: bigint };
        return this.#addStream({ kind: 'file-in', file: this.#files.retain(p.descriptorId), pos: Number(p.offset) });
      }
      case c.OUTPUT_STREAM_CREATE! | c.FILE!: {
        const p = payload as { descriptorId: number; offset: bigint };
        return this.#addStream({ kind: 'file-out', file: this.#files.retain(p.descriptorId), pos: Number(p.offset) });
      }
      case c.OUTPUT_STREAM_CREATE! | c.HTTP!:
        return this.#addStream({
          kind: 'http-out',
          chunks: [],
          written: 0n,
          contentLength: payload === undefined || payload === null ? undefined : BigInt(payload as bigint),
          finished: false,
        });
      case c.HTTP_OUTPUT_STREAM_FINISH!:
        return this.#finishBody(id!);
      case c.HTTP_OUTGOING_BODY_DISPOSE!:
        return this.#disposeBody(id!);
      case c.HTTP_CREATE_REQUEST!:
        return this.#createRequest(payload as HttpRequestPayload);
      case c.FUTURE_SUBSCRIBE! | c.HTTP!:
        return this.#addPoll({ kind: 'future', future: this.#future(id!) });
      case c.FUTURE_TAKE_VALUE! | c.HTTP!:
        return this.#takeResponse(id!);
      case c.FUTURE_DISPOSE! | c.HTTP!: {
        const f = this.#future(id!);
        this.#futures.delete(id!);
        if (f.rid !== undefined && !f.taken) this.#net()?.abort(f.rid);
        // A request still waiting for its body is never sent: nobody would read its response.
        if (f.body) f.body.request = undefined;
        return undefined;
      }
      case c.CLOCKS_DURATION_SUBSCRIBE!:
        return this.#addPoll({ kind: 'timer', at: hrtime.bigint() + BigInt(payload as bigint) });
      case c.CLOCKS_INSTANT_SUBSCRIBE!:
        return this.#addPoll({ kind: 'timer', at: BigInt(payload as bigint) });
      case c.POLL_POLLABLE_READY!: {
        const p = this.#poll(id!);
        // A guest that polls for its response without blocking still gets its request sent.
        if (p.kind === 'future') this.#flushPending(p.future);
        this.#net()?.drain();
        return this.#ready(p);
      }
      case c.POLL_POLLABLE_BLOCK!:
        return this.#block([id!]);
      case c.POLL_POLL_LIST!:
        return this.#block(payload as number[]);
      case c.POLL_POLLABLE_DISPOSE!:
        if (!this.#polls.delete(id!)) throw new Error(`wasi-io: pollable ${id} does not exist`);
        return undefined;
    }
    if (this.#fileCalls.has(call)) return this.#file(call, id!, payload);
    switch (op) {
      case c.INPUT_STREAM_READ:
        return this.#read(this.#stream(id!), Number(payload), false);
      case c.INPUT_STREAM_BLOCKING_READ:
        return this.#read(this.#stream(id!), Number(payload), true);
      case c.INPUT_STREAM_SKIP:
        return BigInt(this.#read(this.#stream(id!), Number(payload), false).byteLength);
      case c.INPUT_STREAM_BLOCKING_SKIP:
        return BigInt(this.#read(this.#stream(id!), Number(payload), true).byteLength);
      case c.INPUT_STREAM_SUBSCRIBE:
      case c.OUTPUT_STREAM_SUBSCRIBE:
        return this.#addPoll({ kind: 'stream', stream: this.#stream(id!) });
      case c.INPUT_STREAM_DISPOSE:
      case c.OUTPUT_STREAM_DISPOSE:
        return this.#disposeStream(id!);
      case c.OUTPUT_STREAM_CHECK_WRITE:
        this.#stream(id!);
        return BigInt(WRITE_BUDGET);
      case c.OUTPUT_STREAM_WRITE:
      case c.OUTPUT_STREAM_BLOCKING_WRITE_AND_FLUSH:
        return this.#write(this.#stream(id!), payload as Uint8Array);
      case c.OUTPUT_STREAM_WRITE_ZEROES:
      case c.OUTPUT_STREAM_BLOCKING_WRITE_ZEROES_AND_FLUSH:
        return this.#write(this.#stream(id!), new Uint8Array(Number(payload)));
      case c.OUTPUT_STREAM_FLUSH:
      case c.OUTPUT_STREAM_BLOCKING_FLUSH:
        this.#stream(id!);
        return undefined;
      case c.OUTPUT_STREAM_SPLICE:
      case c.OUTPUT_STREAM_BLOCKING_SPLICE: {
        const p = payload as { src: number; len: bigint };
        const bytes = this.#read(this.#stream(p.src), Number(p.len), op === c.OUTPUT_STREAM_BLOCKING_SPLICE);
        this.#write(this.#stream(id!), bytes);
        return BigInt(bytes.byteLength);
      }
    }
    throw new Error(`wasi-io: ${this.name(call)} is not available to components in this runtime`);
  }

  // ------------------------------------------------------------------------------ resources

  #addStream(s: Stream): number {
    this.#streams.set(++this.#nextStream, s);
    return this.#nextStream;
  }

  #addPoll(p: Poll): number {
    this.#polls.set(++this.#nextPoll, p);
    return this.#nextPoll;
  }

  #stream(id: number): Stream {
    const s = this.#streams.get(id);
    if (!s) throw CLOSED;
    return s;
  }

  #poll(id: number): Poll {
    const p = this.#polls.get(id);
    if (!p) throw new Error(`wasi-io: pollable ${id} does not exist`);
    return p;
  }

  #future(id: number): Future {
    const f = this.#futures.get(id);
    if (!f) throw new Error(`wasi-io: future ${id} does not exist`);
    return f;
  }

  #disposeStream(id: number): undefined {
    const s = this.#streams.get(id);
    if (!s) return undefined;
    this.#streams.delete(id);
    if (s.kind === 'file-in' || s.kind === 'file-out') this.#files.release(s.file);
    if (s.kind === 'http-in' && !s.exchange.ended && !s.exchange.error) this.#net()?.abort(s.rid);
    return undefined;
  }

  // -------------------------------------------------------------------------------- streams

  #read(s: Stream, max: number, blocking: boolean): Uint8Array {
    switch (s.kind) {
      case 'empty':
        throw CLOSED;
      case 'file-in': {
        const { bytes } = this.#files.read(s.file, max, s.pos);
        if (bytes.byteLength === 0) throw CLOSED;
        s.pos += bytes.byteLength;
        return bytes;
      }
      case 'http-in': {
        const x = s.exchange;
        const net = this.#net();
        net?.drain();
        while (blocking && net && !x.chunks.length && !x.ended && !x.error) net.waitOnce(() => x.chunks.length > 0 || x.ended || !!x.error, Infinity);
        if (x.chunks.length) return takeBytes(x.chunks, max);
        if (x.error) throw { tag: 'last-operation-failed', val: { code: x.error.code.tag, message: x.error.message } };
        if (x.ended) throw CLOSED;
        return new Uint8Array(0);
      }
      default:
        throw new Error(`wasi-io: stream ${s.kind} cannot be read`);
    }
  }

  #write(s: Stream, bytes: Uint8Array): undefined {
    switch (s.kind) {
      case 'discard':
        return undefined;
      case 'file-out':
        s.pos += this.#files.write(s.file, bytes, s.pos);
        return undefined;
      case 'http-out': {
        if (s.finished) throw CLOSED;
        const written = s.written + BigInt(bytes.byteLength);
        if (s.contentLength !== undefined && written > s.contentLength) {
          throw { tag: 'last-operation-failed', val: { tag: 'HTTP-request-body-size', val: written } };
        }
        s.chunks.push(bytes.slice());
        s.written = written;
        return undefined;
      }
      default:
        throw new Error(`wasi-io: stream ${s.kind} cannot be written`);
    }
  }

  // ----------------------------------------------------------------------------------- http

  #createRequest(p: HttpRequestPayload): number {
    const future: Future = { taken: false };
    const id = ++this.#nextFuture;
    this.#futures.set(id, future);
    const body = p.body ? this.#streams.get(p.body) : undefined;
    if (body && body.kind === 'http-out' && !body.finished) {
      // Sent once the guest finishes (or drops) the body, or first waits for the response.
      future.body = body;
      body.request = { payload: p, future };
    } else {
      this.#send(p, future, body && body.kind === 'http-out' ? body : undefined);
    }
    return id;
  }

  #send(p: HttpRequestPayload, future: Future, body: Extract<Stream, { kind: 'http-out' }> | undefined): void {
    future.body = undefined;
    if (body) body.request = undefined;
    const net = this.#net();
    if (!net) {
      future.failed = { tag: 'internal-error', val: 'outgoing HTTP is not connected in this worker' };
      return;
    }
    const bytes = body?.chunks.length ? concat(body.chunks) : undefined;
    if (body) body.chunks = [];
    const { rid, exchange } = net.send({
      method: p.method,
      scheme: p.scheme,
      authority: p.authority,
      pathWithQuery: p.pathWithQuery,
      headers: p.headers,
      body: bytes,
      connectTimeoutNs: p.connectTimeout,
      firstByteTimeoutNs: p.firstByteTimeout,
      betweenBytesTimeoutNs: p.betweenBytesTimeout,
    });
    future.rid = rid;
    future.exchange = exchange;
  }

  /** A request still waiting for its body goes now, with what the guest wrote. */
  #flushPending(f: Future): void {
    const b = f.body;
    if (b?.request) this.#send(b.request.payload, f, b);
  }

  #finishBody(id: number): undefined {
    const s = this.#streams.get(id);
    if (s?.kind !== 'http-out' || s.finished) throw { tag: 'internal-error', val: 'the request body is already finished or closed' };
    if (s.contentLength !== undefined && s.written !== s.contentLength) throw { tag: 'HTTP-request-body-size', val: s.written };
    s.finished = true;
    if (s.request) this.#send(s.request.payload, s.request.future, s);
    return undefined;
  }

  #disposeBody(id: number): undefined {
    const s = this.#streams.get(id);
    this.#streams.delete(id);
    if (s?.kind === 'http-out' && s.request) {
      // Dropped without finish: an empty body is a request without one; a partial one is corrupt.
      if (s.written === 0n) this.#send(s.request.payload, s.request.future, s);
      else {
        s.request.future.failed = { tag: 'internal-error', val: 'the request body was dropped before it was finished' };
        s.request.future.body = undefined;
        s.request = undefined;
      }
    }
    return undefined;
  }

  #settled(f: Future): boolean {
    return !!f.failed || !!f.exchange?.head || !!f.exchange?.error;
  }

  #takeResponse(id: number): unknown {
    const f = this.#future(id);
    this.#flushPending(f);
    this.#net()?.drain();
    if (!this.#settled(f)) return undefined;
    if (f.taken) return { tag: 'err', val: undefined };
    f.taken = true;
    if (f.failed) return { tag: 'ok', val: { tag: 'err', val: f.failed } };
    const x = f.exchange!;
    if (!x.head) return { tag: 'ok', val: { tag: 'err', val: x.error!.code } };
    const bodyStreamId = this.#addStream({ kind: 'http-in', exchange: x, rid: f.rid! });
    return { tag: 'ok', val: { tag: 'ok', val: { status: x.head.status, headers: x.head.headers, bodyStreamId } } };
  }

  // ---------------------------------------------------------------------------------- polls

  #ready(p: Poll): boolean {
    switch (p.kind) {
      case 'ready':
        return true;
      case 'timer':
        return hrtime.bigint() >= p.at;
      case 'future':
        return this.#settled(p.future);
      case 'stream':
        if (p.stream.kind !== 'http-in') return true;
        return p.stream.exchange.chunks.length > 0 || p.stream.exchange.ended || !!p.stream.exchange.error;
    }
  }

  /** Blocks until at least one of the pollables is ready; their indices, as the shim returns them. */
  #block(ids: number[]): Uint32Array {
    if (!ids.length) throw new Error('wasi-io: poll on an empty list');
    const list = ids.map((i) => this.#poll(i));
    for (const p of list) if (p.kind === 'future') this.#flushPending(p.future);
    const net = this.#net();
    const done = (): number[] => list.flatMap((p, i) => (this.#ready(p) ? [i] : []));
    net?.drain();
    for (let ready = done(); ; ready = done()) {
      if (ready.length) return new Uint32Array(ready);
      let wait = Infinity;
      const now = hrtime.bigint();
      for (const p of list) if (p.kind === 'timer') wait = Math.min(wait, Number(p.at - now) / 1e6);
      if (wait === Infinity && !net?.inFlight) throw new Error('wasi-io: poll would wait forever (nothing it waits on can become ready)');
      // A thread with no route for outgoing HTTP (a component run on the main thread: host/inline.ts)
      // has nothing to wake it but the timer: it sleeps until then.
      if (!net) Atomics.wait(SLEEP, 0, 0, Math.max(0, wait));
      else net.waitOnce(() => done().length > 0, Math.max(0, wait));
    }
  }

  // ---------------------------------------------------------------------------------- files

  #file(call: number, id: number, payload: unknown): unknown {
    const c = this.#c;
    const f = this.#files;
    const p = payload as Record<string, unknown>;
    switch (call) {
      case c.FILESYSTEM_DESCRIPTOR_OPEN:
        return f.open(p.path as string, p.flags as number);
      case c.FILESYSTEM_DESCRIPTOR_CLOSE:
        return f.release(id);
      case c.FILESYSTEM_DESCRIPTOR_ADVISE:
        f.fd(id); // advice is a hint; the descriptor must still be open
        return undefined;
      case c.FILESYSTEM_DESCRIPTOR_SYNC_DATA:
        return f.syncData(id);
      case c.FILESYSTEM_DESCRIPTOR_GET_TYPE:
        return f.type(id);
      case c.FILESYSTEM_DESCRIPTOR_SET_SIZE:
        return f.setSize(id, payload as number);
      case c.FILESYSTEM_DESCRIPTOR_SET_TIMES:
        return f.setTimes(id, p.atime, p.mtime);
      case c.FILESYSTEM_DESCRIPTOR_READ:
        return f.read(id, p.length as bigint, p.offset as bigint);
      case c.FILESYSTEM_DESCRIPTOR_WRITE:
        return f.write(id, p.buffer as Uint8Array, p.offset as bigint);
      case c.FILESYSTEM_DESCRIPTOR_SYNC:
        return f.sync(id);
      case c.FILESYSTEM_DESCRIPTOR_STAT:
        return f.stat(id);
      case c.FILESYSTEM_DESCRIPTOR_METADATA_HASH:
        return f.metadataHash(id);
    }
    throw new Error(`wasi-io: ${this.name(call)} is not available to components in this runtime`);
  }

  /** Open resources (tests: nothing is left behind after a guest's calls). */
  counts(): { streams: number; polls: number; futures: number } {
    return { streams: this.#streams.size - 2, polls: this.#polls.size, futures: this.#futures.size };
  }
}
