/**
 * HTTP/1.1 and h2c on one port, as on the capsule's Service port: a TCP server reads the first
 * bytes of each connection and hands the socket, those bytes put back, to the HTTP/1.1 server or
 * the HTTP/2 server. An h2c client with prior knowledge (gRPC) opens with the fixed preface
 * `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (RFC 9113 §3.4); no HTTP/1.1 request line starts with it, and
 * the bytes tell the two apart as soon as they differ from it (at the second byte for a POST).
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { sniffPreface } from '../../runtime/contracts/h2c-preface.ts';

const SNIFF_TIMEOUT_MS = 30_000;

/** The caller's address of each HTTP/2 session (its socket is a stream wrapper that has none). */
const remotes = new WeakMap<object, string>();
export const remoteAddressOf = (session: object | undefined): string => (session && remotes.get(session)) ?? '';

/**
 * The connection as a plain duplex stream whose first bytes are `head`, for the HTTP/2 server. The
 * HTTP/1.1 server takes the socket itself with `head` unshifted back into it, but node:http2 reads
 * a net.Socket through its native handle and would never see bytes put back into the JavaScript
 * stream; a duplex that is no net.Socket it reads through JavaScript (its JSStreamSocket), head first.
 */
function replaying(socket: net.Socket, head: Buffer): Duplex {
  const d = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, encoding, cb) {
      socket.write(chunk, encoding, cb);
    },
    final(cb) {
      socket.end(cb);
    },
    destroy(err, cb) {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  d.push(head);
  socket.on('data', (c: Buffer) => {
    if (!d.push(c)) socket.pause();
  });
  socket.on('end', () => d.push(null));
  socket.on('close', () => d.destroy());
  return d;
}

export function dualServer(h1: http.Server, h2: http2.Http2Server): net.Server {
  return net.createServer({ pauseOnConnect: true }, (socket) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const kind = sniffPreface(head);
      if (!kind) return;
      socket.off('data', onData);
      socket.setTimeout(0);
      socket.pause();
      if (kind === 'http1') {
        socket.unshift(head);
        h1.emit('connection', socket);
        socket.resume();
        return;
      }
      // The server makes the session of a connection at once, in the emit: that session is this caller's.
      const remote = socket.remoteAddress ?? '';
      const tag = (s: object) => remotes.set(s, remote);
      h2.once('session', tag);
      h2.emit('connection', replaying(socket, head));
      h2.off('session', tag);
    };
    socket.on('data', onData);
    socket.on('error', () => socket.destroy());
    // A connection that never says which protocol it speaks is not kept open.
    socket.setTimeout(SNIFF_TIMEOUT_MS, () => socket.destroy());
    socket.resume();
  });
}
