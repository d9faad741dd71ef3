/**
 * What the in-thread WASI backend (backend.ts) needs of a route for a guest's outgoing HTTP, and the
 * guest-side state of one exchange. Two routes implement it: NetClient (net-client.ts) relays each
 * request to the main thread and blocks the guest's thread while it waits; LocalNet (net-local.ts)
 * performs requests on the guest's own thread while the guest is suspended (JSPI).
 */
import type { HttpErrorCode, NetRequest, ToGuest } from './net-protocol.ts';

export interface Exchange {
  head?: { status: number; headers: [string, string][] };
  /** Body bytes received and not read yet. */
  chunks: Uint8Array[];
  ended: boolean;
  error?: { code: HttpErrorCode; message: string };
}

export interface NetRoute {
  send(r: Omit<NetRequest, 'op' | 'rid'>): { rid: number; exchange: Exchange };
  /** Stops a request the guest let go of before its end (its response is dropped). */
  abort(rid: number): void;
  /** Applies what has arrived and not been applied yet. */
  drain(): void;
  /** Whether anything can still arrive (a wait with no timer and nothing in flight would never end). */
  readonly inFlight: boolean;
  /**
   * A blocking route: sleeps the thread until something arrives or `timeoutMs` passes, unless
   * `ready()` is already true; returns after one wake-up (the caller loops).
   */
  waitOnce?(ready: () => boolean, timeoutMs: number): void;
  /**
   * A route served by this thread's own event loop (nothing arrives while the thread is blocked):
   * resolves at the next arrival or once `timeoutMs` has passed.
   */
  next?(timeoutMs: number): Promise<void>;
}

/** Applies one message to the exchange it is for; an exchange that ends (or fails) leaves `live`. */
export function applyToGuest(live: Map<number, Exchange>, m: ToGuest): void {
  const x = live.get(m.rid);
  if (!x) return; // aborted meanwhile
  if (m.kind === 'head') x.head = { status: m.status, headers: m.headers };
  else if (m.kind === 'chunk') x.chunks.push(m.data);
  else if (m.kind === 'end') {
    x.ended = true;
    live.delete(m.rid);
  } else {
    x.error = { code: m.code, message: m.message };
    live.delete(m.rid);
  }
}
