/**
 * Telling h2c from HTTP/1.1 on one port: an HTTP/2 client with prior knowledge (gRPC) opens with the
 * fixed client preface (RFC 9113 §3.4), which no HTTP/1.1 request line starts with. Shared by the
 * runtime's A2A port (gRPC beside JSON-RPC and REST) and the operator's activator, which serves
 * both on its port for sleeping Capsules.
 */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** 'h2c' once `head` is the whole preface, 'http1' once it departs from it, undefined while it is a prefix of it. */
export function sniffPreface(head: Buffer): 'h2c' | 'http1' | undefined {
  const n = Math.min(head.length, PREFACE.length);
  if (!head.subarray(0, n).equals(PREFACE.subarray(0, n))) return 'http1';
  return n === PREFACE.length ? 'h2c' : undefined;
}
