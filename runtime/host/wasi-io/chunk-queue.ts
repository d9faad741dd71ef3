/**
 * The byte queues of the component thread's HTTP bodies (backend.ts): a request body written in
 * several writes, and a response body as its chunks come from the main thread (net-client.ts).
 */

/** The chunks as one array (the chunk itself when there is one). */
export function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  let n = 0;
  for (const c of chunks) n += c.byteLength;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * Up to `max` bytes off the front of a chunk queue: every chunk that has arrived, as far as they
 * fit, not one network chunk per read. Why: a streamed response comes as one chunk per HTTP chunk
 * (a provider's SSE answer: one per event, 8-10 for a short turn), and each read is several calls
 * into the host for the guest (subscribe, block, read, drop), each allocating the transpiled
 * glue's task objects, in the component thread on a task's critical path.
 */
export function takeBytes(chunks: Uint8Array[], max: number): Uint8Array {
  const first = chunks[0]!;
  if (first.byteLength >= max || chunks.length === 1) {
    if (first.byteLength <= max) {
      chunks.shift();
      return first;
    }
    chunks[0] = first.subarray(max);
    return first.subarray(0, max);
  }
  let n = 0;
  let whole = 0;
  while (whole < chunks.length && n + chunks[whole]!.byteLength <= max) n += chunks[whole++]!.byteLength;
  const out = new Uint8Array(whole < chunks.length ? max : n);
  let at = 0;
  for (const c of chunks.splice(0, whole)) {
    out.set(c, at);
    at += c.byteLength;
  }
  // The next chunk does not fit whole: its front fills the rest.
  if (at < out.byteLength) {
    const part = chunks[0]!;
    out.set(part.subarray(0, out.byteLength - at), at);
    chunks[0] = part.subarray(out.byteLength - at);
  }
  return out;
}
