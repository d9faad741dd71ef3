/**
 * The gRPC binding: the SDK's `grpcService` (A2A 1.0 `lf.a2a.v1.A2AService`) on a @grpc/grpc-js
 * server of its own port, calling the same request handler as the HTTP bindings. Bound before the
 * card is built (the card advertises the port); the service is added once the handler exists.
 */
import * as grpc from '@grpc/grpc-js';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { A2AService, grpcService, type UserBuilder } from '@a2a-js/sdk/server/grpc';
import { MurError } from '../errors.ts';
import { ANONYMOUS, AuthError, type Authenticator, type Caller } from './auth.ts';

export interface GrpcBinding {
  readonly port: number;
  serve(handler: A2ARequestHandler, auth: Authenticator): void;
  close(): void;
}

/** gRPC metadata as the lower-case header map the authenticator reads. */
function metadataHeaders(md: grpc.Metadata): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(md.getMap())) h[k] = v.toString();
  return h;
}

type AnyCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

/**
 * Every method of the SDK's service, behind authentication: a refused call ends UNAUTHENTICATED
 * before the SDK sees it (the SDK's user builder cannot refuse with that status); an accepted
 * call's caller is what the user builder hands the SDK.
 */
function guarded(impl: grpc.UntypedServiceImplementation, auth: Authenticator, callers: WeakMap<object, Caller>): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  for (const [name, fn] of Object.entries(impl)) {
    out[name] = ((call: AnyCall, callback?: grpc.sendUnaryData<unknown>) => {
      auth.authenticate(metadataHeaders(call.metadata)).then(
        (caller) => {
          callers.set(call, caller);
          (fn as (c: AnyCall, cb?: grpc.sendUnaryData<unknown>) => void)(call, callback);
        },
        (e: unknown) => {
          const err = { code: grpc.status.UNAUTHENTICATED, details: e instanceof AuthError ? e.message : 'invalid credentials' };
          if (callback) callback(err, null);
          else (call as grpc.ServerWritableStream<unknown, unknown>).emit('error', err);
        },
      );
    }) as grpc.UntypedHandleCall;
  }
  return out;
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
    serve(handler, auth) {
      if (added) return;
      added = true;
      const callers = new WeakMap<object, Caller>();
      const userBuilder: UserBuilder = async (call) => callers.get(call) ?? ANONYMOUS;
      const impl = grpcService({ requestHandler: handler, userBuilder }) as unknown as grpc.UntypedServiceImplementation;
      server.addService(A2AService, guarded(impl, auth, callers));
    },
    close() {
      server.forceShutdown();
    },
  };
}
