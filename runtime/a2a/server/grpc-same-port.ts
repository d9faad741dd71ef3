/**
 * gRPC on the A2A port itself (`mur serve --grpc-port same`), so one Service port carries every
 * binding and the activator, which forwards h2c to the pod's a2a port, has gRPC to forward to.
 *
 * The A2A http.Server's connection listener is wrapped: it reads the first bytes of each
 * connection. An h2c client with prior knowledge (gRPC) opens with the fixed preface
 * `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (RFC 9113 §3.4), which no HTTP/1.1 request line starts with;
 * the bytes tell the two apart as soon as they differ from it (at the second byte for a POST).
 * The socket, those bytes put back (`unshift`), goes to Node's HTTP/1.1 parser as before, or to a
 * grpc-js server through its connection injector (node:http2 reads a socket's already-buffered
 * bytes before its native handle: lib/internal/http2/core.js, nodejs/node#34532).
 *
 * grpc-js and the SDK's gRPC service are imported on the first h2c connection only: a capsule that
 * nobody calls over gRPC does not carry them (docs/a2a.md, "gRPC on the A2A port").
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { Authenticator } from './auth.ts';
import type { GrpcInjector } from './grpc.ts';
import { sniffPreface } from '../../contracts/h2c-preface.ts';
import type { Activity } from '../../telemetry/activity.ts';

export interface SamePortOptions {
  /** Largest gRPC message accepted (the HTTP bindings' body limit). */
  maxBody: number;
  /** A connection that has not said which protocol it speaks within this budget is closed (the headers budget). 0 = none. */
  sniffTimeoutMs: number;
  /** An h2c connection without a call for this long gets GOAWAY (the keep-alive budget). 0 = kept. */
  idleMs: number;
}

export interface SamePortGrpc {
  /** The handler, authenticator and activity of the calls; h2c connections that came before wait for it. */
  serve(handler: A2ARequestHandler, auth: Authenticator, activity: Activity | undefined): void;
  /** Drops the connections still being told apart and every gRPC connection. */
  close(): Promise<void>;
}

interface Served {
  handler: A2ARequestHandler;
  auth: Authenticator;
  activity: Activity | undefined;
}

/**
 * Wraps the connection listener of `server` (not yet listening, before connection-limits.ts wraps
 * it in turn, so the per-client cap counts h2c connections too and refuses before any byte is read).
 */
export function grpcOnSamePort(server: Server, o: SamePortOptions): SamePortGrpc {
  const [parse] = server.listeners('connection') as Array<(socket: Socket) => void>;
  if (!parse) throw new Error('grpcOnSamePort: the http.Server has no connection listener');
  server.removeListener('connection', parse);
  let resolveServed!: (s: Served) => void;
  let rejectServed!: (e: Error) => void;
  const served = new Promise<Served>((resolve, reject) => {
    resolveServed = resolve;
    rejectServed = reject;
  });
  served.catch(() => undefined);
  let loading: Promise<GrpcInjector> | undefined;
  const injector = () =>
    (loading ??= Promise.all([import('./grpc.ts'), served]).then(([m, s]) =>
      m.grpcInjector({ maxBody: o.maxBody, idleMs: o.idleMs }, s.handler, s.auth, s.activity),
    ));
  const sniffing = new Set<Socket>();

  const toGrpc = (socket: Socket) => {
    injector().then(
      (i) => {
        sniffing.delete(socket);
        if (!socket.destroyed) i.inject(socket);
      },
      () => socket.destroy(),
    );
  };

  server.on('connection', (socket: Socket) => {
    sniffing.add(socket);
    let head: Buffer = Buffer.alloc(0);
    // A connection that never says which protocol it speaks is not kept open.
    const timer = o.sniffTimeoutMs > 0 ? setTimeout(() => socket.destroy(), o.sniffTimeoutMs) : undefined;
    timer?.unref();
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const kind = sniffPreface(head);
      if (!kind) return;
      socket.off('data', onData);
      clearTimeout(timer);
      socket.pause();
      socket.unshift(head);
      if (kind === 'http1') {
        sniffing.delete(socket);
        parse.call(server, socket);
        socket.resume();
      } else toGrpc(socket);
    };
    socket.on('data', onData);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => {
      clearTimeout(timer);
      sniffing.delete(socket);
    });
  });

  return {
    serve: (handler, auth, activity) => resolveServed({ handler, auth, activity }),
    async close() {
      rejectServed(new Error('the A2A server is closing'));
      for (const s of sniffing) s.destroy();
      const i = await loading?.catch(() => undefined);
      i?.close();
    },
  };
}
