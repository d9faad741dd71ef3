/**
 * The replica bus's envelope (replica-bus.ts): what one NOTIFY payload carries (a request, its
 * response, a stream's events, its end, a stop), the channel of a replica, errors carried by name,
 * message and data, and the cut of a message into chunks that fit PostgreSQL's 8000-byte payload.
 */

/** Payload bytes per NOTIFY, under PostgreSQL's 8000-byte limit with room for the envelope. */
const CHUNK_BYTES = 7000;

// biome-ignore lint/suspicious/noExplicitAny: a bus payload is any JSON its sender wrote; each receiver reads the shape it expects
export type Json = any;

/** An error thrown by a remote handler, with the name and data it had there. */
export class RemoteError extends Error {
  constructor(
    message: string,
    readonly remoteName: string,
    readonly data: Json,
  ) {
    super(message);
    this.name = 'RemoteError';
  }
}

export type Envelope =
  | { t: 'req'; id: string; method: string; params: Json; stream?: boolean }
  | { t: 'res'; id: string; ok?: Json; err?: { name: string; message: string; data?: Json } }
  | { t: 'ev'; id: string; ev: Json }
  | { t: 'end'; id: string; err?: { name: string; message: string; data?: Json } }
  | { t: 'stop'; id: string };

export function channelOf(id: string): string {
  return `murmur_replica_${id}`;
}

export function toErr(e: { name: string; message: string; data?: Json }): Error {
  return new RemoteError(e.message, e.name, e.data);
}

export function errOf(e: unknown): { name: string; message: string; data?: Json } {
  if (e instanceof Error) {
    const data = (e as { data?: unknown }).data ?? (e as { metadata?: unknown }).metadata;
    return { name: e.name, message: e.message, ...(data !== undefined ? { data } : {}) };
  }
  return { name: 'Error', message: String(e) };
}

/** Cut `s` into pieces whose JSON encoding fits `max` bytes (halving a piece until it does). */
export function chunksOf(s: string, max = CHUNK_BYTES): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    let n = Math.min(max, s.length - i);
    while (n > 1 && Buffer.byteLength(JSON.stringify(s.slice(i, i + n))) > max) n = Math.floor(n / 2);
    out.push(s.slice(i, i + n));
    i += n;
  }
  return out.length > 0 ? out : [''];
}
