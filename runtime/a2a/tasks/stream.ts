/**
 * Stream subscribers: one bounded queue per open stream (SSE on JSON-RPC and HTTP+JSON, a server
 * stream on gRPC). The task machine only ever appends to a subscriber's queue, so nothing a reader
 * does (reading slowly, not reading, vanishing) can block the executor. Past either bound,
 * droppable events are dropped and counted, and the reader gets one `lagged` notice when it
 * catches up. The SDK's SSE loop writes without waiting for `drain`, which is why the bound on
 * bytes buffered in the response lives here (see docs/a2a.md, "Slow and vanished readers").
 */
import type { StreamResponse } from '@a2a-js/sdk';

export interface StreamItem {
  resp: StreamResponse;
  /** The stream ends after this item (final status, or input-required interruption). */
  ends: boolean;
}

/** What a subscriber can see of the connection it writes to (an http.ServerResponse, for SSE). */
export interface StreamSink {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableLength: number;
  write(chunk: string): boolean;
  once(event: 'close', listener: () => void): unknown;
}

export interface SubscriberBounds {
  /** Events queued per subscriber before droppable ones are dropped. */
  maxQueued: number;
  /** Bytes buffered in the sink before droppable events are dropped. */
  maxBuffered: number;
  /** Interval of `: heartbeat` SSE comments; 0 = none. */
  heartbeatMs: number;
  /** Told after each heartbeat written (metrics, and tests that wait for one instead of sleeping). */
  onHeartbeat?: () => void;
}

export class Subscriber {
  readonly queue: StreamItem[] = [];
  closed = false;
  private dropped = 0;
  private wake: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  constructor(
    private readonly sink: StreamSink | undefined,
    private readonly bounds: SubscriberBounds,
    /** Builds the lagged notice for `n` dropped events (current task state). */
    private readonly lagged: (n: number) => StreamResponse,
    private readonly onDrop: () => void,
  ) {
    sink?.once('close', () => this.close());
    if (sink && bounds.heartbeatMs > 0) {
      // An SSE comment keeps idle proxies from cutting a long quiet stream. Each write is a whole
      // frame, like the SDK's, so frames never interleave.
      this.heartbeat = setInterval(() => {
        if (sink.headersSent && !sink.writableEnded && sink.writableLength <= bounds.maxBuffered) {
          sink.write(': heartbeat\n\n');
          bounds.onHeartbeat?.();
        }
      }, bounds.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  private overloaded(): boolean {
    if (this.queue.length >= this.bounds.maxQueued) return true;
    return this.sink !== undefined && this.sink.writableLength > this.bounds.maxBuffered;
  }

  push(item: StreamItem, droppable: boolean): void {
    if (this.closed) return;
    if (droppable && this.overloaded()) {
      this.dropped++;
      this.onDrop();
      return;
    }
    if (this.dropped > 0) {
      this.queue.push({ resp: this.lagged(this.dropped), ends: false });
      this.dropped = 0;
    }
    this.queue.push(item);
    this.signal();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.signal();
  }

  private signal(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private next(): Promise<void> {
    return new Promise((r) => (this.wake = r));
  }

  /** Yields queued events until an ending item, a close, or the consumer stops; then runs `onEnd`. */
  async *drain(onEnd: () => void): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      for (;;) {
        const item = this.queue.shift();
        if (item) {
          yield item.resp;
          if (item.ends) return;
          continue;
        }
        if (this.closed) return;
        await this.next();
      }
    } finally {
      this.closed = true;
      clearInterval(this.heartbeat);
      onEnd();
    }
  }
}
