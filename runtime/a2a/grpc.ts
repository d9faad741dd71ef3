/**
 * The gRPC binding: the SDK's `grpcService` (A2A 1.0 `lf.a2a.v1.A2AService`) on a @grpc/grpc-js
 * server of its own port, calling the same request handler as the HTTP bindings. Bound before the
 * card is built (the card advertises the port); the service is added once the handler exists.
 */
import * as grpc from '@grpc/grpc-js';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { A2AService, grpcService, type UserBuilder } from '@a2a-js/sdk/server/grpc';
import { MurError } from '../errors.ts';

export interface GrpcBinding {
  readonly port: number;
  serve(handler: A2ARequestHandler, userBuilder: UserBuilder): void;
  close(): void;
}

export async function startGrpc(host: string, port: number, maxBody: number): Promise<GrpcBinding> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': maxBody });
  const addr = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err, p) => {
      if (err) {
        reject(
          new MurError('E-A2A-001', `cannot listen for gRPC on ${addr}: ${err.message}`, {
            hint: 'pick a free port (--grpc-port) or stop the process holding it',
            cause: err,
          }),
        );
      } else resolve(p);
    }),
  );
  let added = false;
  return {
    port: bound,
    serve(handler, userBuilder) {
      if (added) return;
      added = true;
      server.addService(A2AService, grpcService({ requestHandler: handler, userBuilder }) as unknown as grpc.UntypedServiceImplementation);
    },
    close() {
      server.forceShutdown();
    },
  };
}
