/**
 * Messages between a component's thread and the main thread for the guest's outgoing HTTP
 * (wasi:http/outgoing-handler). The guest's thread builds the whole request, sends it once, and
 * reads the response's head and body as the main thread forwards them: the messages of one turn of
 * the main thread's event loop as one array (ToGuest[], in order), each array followed by a bump of a
 * shared counter, which the guest's thread waits on when the guest blocks (Atomics.wait), so it
 * never spins and never misses one.
 */

export interface NetRequest {
  op: 'request';
  rid: number;
  method: string;
  /** 'http:' or 'https:' */
  scheme: string;
  authority: string;
  pathWithQuery: string;
  headers: [string, string][];
  body: Uint8Array | undefined;
  /** Nanoseconds (wasi:http request-options), none = no limit. */
  connectTimeoutNs: bigint | undefined;
  firstByteTimeoutNs: bigint | undefined;
  betweenBytesTimeoutNs: bigint | undefined;
}

export type ToMain = NetRequest | { op: 'abort'; rid: number };

/** A wasi:http `error-code` value: `{ tag }` or `{ tag, val }`. */
export type HttpErrorCode = { tag: string; val?: unknown };

export type ToGuest =
  | { rid: number; kind: 'head'; status: number; headers: [string, string][] }
  | { rid: number; kind: 'chunk'; data: Uint8Array }
  | { rid: number; kind: 'end' }
  /** Before the head: the response future fails with `code`; after it: the body stream fails. */
  | { rid: number; kind: 'error'; code: HttpErrorCode; message: string };
