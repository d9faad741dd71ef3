/**
 * The last JSON-RPC answer to each `tasks/get` (0.3) and `GetTask` (1.0) request shape, kept with
 * what the task's snapshot was made of when it was answered, so the same question about an
 * unchanged task is answered with the same bytes without the SDK's transport handler, the request
 * handler, the 0.3 ⇄ 1.0 translation and a JSON.stringify. Why: a client that does not block polls,
 * and a queued task is polled many times before it changes (8 outstanding tasks swept every 10 ms:
 * 4 to 13 polls a task), each poll redoing that work for the whole task: 5–12 µs of a warm poll of
 * a 1 KB task, a fifth of a 130 KB one's (docs/measurements/a2a.md, session 26).
 *
 * What makes a hit safe: the key is the protocol version and the request's whole `params` (its
 * JSON text), and a hit also needs the parts of the task's snapshot now (`snapshotParts`: the
 * record itself, its state, status message, timestamp, artifacts and history, by identity) to be
 * the ones it was answered with. The record's artifacts and messages are replaced or appended,
 * never changed in place, so equal parts mean an equal snapshot. The parts come from the task
 * machine's `find`, which only finds a task the caller owns: another caller's request never
 * reaches an answer. Only successful answers are kept; a request the SDK would refuse (bad params,
 * unknown task) is always answered by the SDK.
 *
 * Bounded: at most MAX_ANSWERS answers and MAX_CHARS characters of them (an entry also holds its
 * parts, about as large), oldest out first; an answer longer than MAX_ANSWER_CHARS is not kept.
 */

/** An answer's result as JSON text, and the snapshot parts it was made from. */
interface Entry {
  parts: readonly unknown[];
  result: string;
}

export const MAX_ANSWERS = 256;
export const MAX_CHARS = 2 * 1024 * 1024;
export const MAX_ANSWER_CHARS = 256 * 1024;

/** Whether two parts lists hold the same values in the same order (=== each). */
export function sameParts(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The JSON text the SDK's envelope `{ jsonrpc: '2.0', id, result }` stringifies to, from the
 * result's own text: JSON.stringify writes an object's keys in their insertion order.
 */
export function envelopeText(id: unknown, result: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`;
}

/**
 * The result's text inside an envelope's JSON text (`text` = JSON.stringify(envelope)), or
 * undefined when the envelope is not exactly `{ jsonrpc, id, result }` in that order (an error
 * answer, or an SDK that shapes it otherwise: then nothing is kept).
 */
export function resultText(envelope: Record<string, unknown>, text: string): string | undefined {
  const keys = Object.keys(envelope);
  if (keys.length !== 3 || keys[0] !== 'jsonrpc' || keys[1] !== 'id' || keys[2] !== 'result' || envelope.jsonrpc !== '2.0') return undefined;
  const head = envelopeText(envelope.id, '');
  const prefix = head.slice(0, -1);
  return text.startsWith(prefix) && text.endsWith('}') ? text.slice(prefix.length, -1) : undefined;
}

export class AnswerMemo {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;

  /** The kept result text for `key` if the task's snapshot parts are still `parts`. */
  get(key: string, parts: readonly unknown[]): string | undefined {
    const e = this.entries.get(key);
    return e && sameParts(e.parts, parts) ? e.result : undefined;
  }

  /** Keeps `result` for `key` (replacing what was kept), dropping the oldest past the bounds. */
  set(key: string, parts: readonly unknown[], result: string): void {
    this.drop(key);
    if (result.length > MAX_ANSWER_CHARS) return;
    this.entries.set(key, { parts, result });
    this.chars += result.length;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= MAX_ANSWERS && this.chars <= MAX_CHARS) break;
      this.drop(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.chars -= e.result.length;
  }
}
