/**
 * `trace.jsonl`: one JSON object per line, each with `event_type`, `session_id`, `timestamp` (ms) and
 * a per-session `seq`. Lines are appended synchronously, so a crash loses at most the line being
 * written and readers (`mur trace`) can follow a live session. The file stays open for the writer's
 * life (opened on the first line, in append mode): opening and closing it for every line was a
 * third of the writer's time on the main thread in a CPU profile of `mur serve` (issue 18).
 * Listeners see every event as it is written (metrics and spans hang off this). Every secret the
 * runtime holds is redacted from a line before it is written or handed to a listener
 * (runtime/secrets.ts): a provider's error body quoting the key reaches the trace as `[redacted]`.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { redact, redactDeep } from '../secrets.ts';

export type TraceEvent = Record<string, unknown> & { event_type: string };
export type TraceListener = (e: TraceEvent & { session_id: string; timestamp: number; seq: number }) => void;

export class TraceWriter {
  readonly path: string;
  readonly sessionId: string;
  private seq = 0;
  private listeners: TraceListener[] = [];
  /** Set by close(): later lines are dropped. */
  private closed = false;
  private fd: number | undefined;

  constructor(path: string, sessionId: string) {
    this.path = path;
    this.sessionId = sessionId;
  }

  onEvent(l: TraceListener): () => void {
    this.listeners.push(l);
    return () => {
      this.listeners = this.listeners.filter((x) => x !== l);
    };
  }

  write(eventType: string, fields: Record<string, unknown> = {}): void {
    if (this.closed) return;
    let line: TraceEvent & { session_id: string; timestamp: number; seq: number } = {
      event_type: eventType,
      session_id: this.sessionId,
      timestamp: Date.now(),
      seq: ++this.seq,
    };
    // An omitted number is absent from the trace, never written as 0 or null. Copied in place, not
    // spread from a filtered copy: a line is written for every step of every task (issue 42).
    for (const k in fields) {
      const v = fields[k];
      if (v !== undefined && Object.hasOwn(fields, k)) line[k] = v;
    }
    let text = JSON.stringify(line);
    // One search of the serialized line; the event is rebuilt only when it holds a secret.
    if (redact(text) !== text) {
      line = redactDeep(line);
      text = JSON.stringify(line);
    }
    this.fd ??= openSync(this.path, 'a');
    const bytes = Buffer.from(`${text}\n`);
    // A write to a regular file may be short (a full disk): the rest goes after it, or the error is thrown.
    for (let off = 0; off < bytes.length; ) off += writeSync(this.fd, bytes, off);
    for (const l of this.listeners) {
      try {
        l(line);
      } catch {
        // A listener (metrics, spans) must never break the session.
      }
    }
  }

  close(): void {
    this.closed = true;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
