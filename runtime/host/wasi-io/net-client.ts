/**
 * The guest thread's side of outgoing HTTP (net-protocol.ts): sends a request to the main thread,
 * collects what comes back, and blocks the thread (Atomics.wait on the shared counter) when the
 * guest blocks on a response that has not arrived.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { HttpErrorCode, NetRequest, ToGuest } from './net-protocol.ts';

export interface Exchange {
  head?: { status: number; headers: [string, string][] };
  /** Body bytes received and not read yet. */
  chunks: Uint8Array[];
  ended: boolean;
  error?: { code: HttpErrorCode; message: string };
}

export class NetClient {
  readonly #port: MessagePort;
  readonly #flag: Int32Array;
  readonly #sent: () => void;
  readonly #live = new Map<number, Exchange>();
  #next = 0;

  /** `sent` is told after each request is posted: a main thread polling for the call's answer stops and serves it. */
  constructor(port: MessagePort, flag: Int32Array, sent: () => void = () => {}) {
    this.#port = port;
    this.#flag = flag;
    this.#sent = sent;
  }

  send(r: Omit<NetRequest, 'op' | 'rid'>): { rid: number; exchange: Exchange } {
    const rid = ++this.#next;
    const exchange: Exchange = { chunks: [], ended: false };
    this.#live.set(rid, exchange);
    this.#port.postMessage({ op: 'request', rid, ...r } satisfies NetRequest);
    this.#sent();
    return { rid, exchange };
  }

  /** Stops a request the guest let go of before its end (its response is dropped). */
  abort(rid: number): void {
    if (!this.#live.delete(rid)) return;
    this.#port.postMessage({ op: 'abort', rid });
  }

  /** Applies every message the main thread has sent so far (one array per turn of its event loop). */
  drain(): void {
    for (;;) {
      const got = receiveMessageOnPort(this.#port);
      if (!got) return;
      for (const m of got.message as ToGuest[]) this.#apply(m);
    }
  }

  #apply(m: ToGuest): void {
    const x = this.#live.get(m.rid);
    if (!x) return; // aborted meanwhile
    if (m.kind === 'head') x.head = { status: m.status, headers: m.headers };
    else if (m.kind === 'chunk') x.chunks.push(m.data);
    else if (m.kind === 'end') {
      x.ended = true;
      this.#live.delete(m.rid);
    } else {
      x.error = { code: m.code, message: m.message };
      this.#live.delete(m.rid);
    }
  }

  /** Whether anything can still arrive (a wait with no timer and nothing in flight would never end). */
  get inFlight(): boolean {
    return this.#live.size > 0;
  }

  /**
   * Drains, and if `ready()` is still false, sleeps until the main thread sends something or
   * `timeoutMs` passes; returns after one wake-up (the caller loops).
   */
  waitOnce(ready: () => boolean, timeoutMs: number): void {
    const seen = Atomics.load(this.#flag, 0);
    this.drain();
    if (ready()) return;
    Atomics.wait(this.#flag, 0, seen, timeoutMs);
    this.drain();
  }
}
