/**
 * The response a request's headers object belongs to, while that response is open: the SDK passes
 * a call's headers on in its ServerCallContext, and a stream subscriber (handler scope.ts `sinkOf`)
 * looks its response up to watch the bytes buffered in it (backpressure) and to write heartbeats.
 *
 * Why each entry is removed when its response closes, and not left to a WeakMap alone: the entry's
 * value leads back to its key (the response holds its request, the request its headers), and V8's
 * young-generation collector does not break such a cycle through a WeakMap, so every tracked
 * request and response (≈ 3.4 KB) survived its scavenges and was promoted, to be freed only by a
 * full collection. Measured on `mur serve` before this (issue 42): a `tasks/get` left 3.8 KB for
 * the old generation against 0.15 KB for a bare node:http server, and the scavenges took 0.35–0.57
 * ms against 0.13–0.15 (docs/measurements/a2a.md).
 */
import type { ServerResponse } from 'node:http';

export class ResponseOf {
  readonly #responses = new WeakMap<object, ServerResponse>();
  #open = 0;

  /** Keeps `res` as the response of `headers` until `res` closes (its end sent, or its connection gone). */
  track(headers: object, res: ServerResponse): void {
    if (this.#responses.has(headers)) return;
    this.#responses.set(headers, res);
    this.#open++;
    res.once('close', () => {
      this.#responses.delete(headers);
      this.#open--;
    });
  }

  /** The open response `headers` belongs to, if it is tracked. */
  get(headers: object): ServerResponse | undefined {
    return this.#responses.get(headers);
  }

  /** Responses tracked and not yet closed. */
  get open(): number {
    return this.#open;
  }
}
