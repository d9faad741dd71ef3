/**
 * The gRPC binding: the SDK's `grpcService` (A2A 1.0 `lf.a2a.v1.A2AService`) on a @grpc/grpc-js
 * server, calling the same request handler as the HTTP bindings. Either on a port of its own
 * (`startGrpc`: bound before the card is built, which advertises the port; the service is added
 * once the handler exists) or on the A2A port itself (`grpcInjector`: the h2c connections
 * grpc-same-port.ts tells apart are injected into it).
 */
import type { Duplex } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { A2AService, grpcService, type UserBuilder } from '@a2a-js/sdk/server/grpc';
import { GrpcVersionNotSupportedError, buildGrpcErrorMetadata } from '@a2a-js/sdk/errors/grpc';
import { MurError } from '../../errors.ts';
import { ANONYMOUS, AuthError, type Authenticator, type Caller } from './auth.ts';
import { normaliseVersion } from '../core/wire.ts';
import type { Activity } from '../../telemetry/activity.ts';

export interface GrpcBinding {
  readonly port: number;
  serve(handler: A2ARequestHandler, auth: Authenticator, activity?: Activity): void;
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
 * The refusal of a call whose `A2A-Version` this binding does not serve, or undefined when it is
 * served (its spelling normalised in place: "1", "1.0.1" → "1.0", as on the HTTP bindings). The
 * SDK refuses with FAILED_PRECONDITION; A2A 1.0's gRPC mapping of VersionNotSupportedError is
 * UNIMPLEMENTED, which is what this answers (with the SDK's ErrorInfo details). Only 1.0 is served
 * over gRPC; no header means 0.3.
 */
export function versionRefusal(md: grpc.Metadata): grpc.ServiceError | undefined {
  const raw = md.get('a2a-version')[0]?.toString();
  if (normaliseVersion(raw) === '1.0') {
    md.set('a2a-version', '1.0');
    return undefined;
  }
  const asked = raw === undefined ? 'no A2A-Version (= 0.3)' : `A2A-Version '${raw.slice(0, 40)}'`;
  const error = new GrpcVersionNotSupportedError({
    message: `${asked} is not served over gRPC: this binding speaks A2A 1.0 (send the metadata 'a2a-version: 1.0'); 0.3 is served over JSON-RPC [E-A2A-045]`,
    status: grpc.status.UNIMPLEMENTED,
  });
  const metadata = buildGrpcErrorMetadata(grpc.Metadata, error) ?? new grpc.Metadata();
  return Object.assign(new Error(error.message), { code: grpc.status.UNIMPLEMENTED, details: error.message, metadata });
}

/**
 * Holds the capsule awake for an accepted call until it ends: a unary call when it is answered, a
 * server stream when it finishes; either when the caller cancels. Returns the callback to hand on.
 */
function heldAwake(call: AnyCall, callback: grpc.sendUnaryData<unknown> | undefined, activity: Activity | undefined): grpc.sendUnaryData<unknown> | undefined {
  if (!activity) return callback;
  const end = activity.begin();
  for (const ev of ['cancelled', 'finish', 'close']) call.once(ev, end);
  // Cancelled while the caller was being authenticated: its 'cancelled' event has gone by.
  if (call.cancelled) end();
  if (!callback) return undefined;
  return (...args: Parameters<grpc.sendUnaryData<unknown>>) => {
    end();
    callback(...args);
  };
}

/**
 * Every method of the SDK's service, behind authentication and the version check: a refused
 * call ends UNAUTHENTICATED (or UNIMPLEMENTED) before the SDK sees it (the SDK's user builder
 * cannot refuse with that status); an accepted call's caller is what the user builder hands the SDK.
 */
function guarded(
  impl: grpc.UntypedServiceImplementation,
  auth: Authenticator,
  callers: WeakMap<object, Caller>,
  activity: Activity | undefined,
): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  for (const [name, fn] of Object.entries(impl)) {
    out[name] = ((call: AnyCall, callback?: grpc.sendUnaryData<unknown>) => {
      const refuse = (err: Partial<grpc.ServiceError>) => {
        if (callback) callback(err, null);
        else (call as grpc.ServerWritableStream<unknown, unknown>).emit('error', err);
      };
      auth.authenticate(metadataHeaders(call.metadata)).then(
        (caller) => {
          const wrongVersion = versionRefusal(call.metadata);
          if (wrongVersion) return refuse(wrongVersion);
          callers.set(call, caller);
          (fn as (c: AnyCall, cb?: grpc.sendUnaryData<unknown>) => void)(call, heldAwake(call, callback, activity));
        },
        (e: unknown) => refuse({ code: grpc.status.UNAUTHENTICATED, details: e instanceof AuthError ? e.message : 'invalid credentials' }),
      );
    }) as grpc.UntypedHandleCall;
  }
  return out;
}

/** The A2A service, guarded, on `server`: every call authenticated, version-checked and held awake. */
function addA2AService(server: grpc.Server, handler: A2ARequestHandler, auth: Authenticator, activity: Activity | undefined): void {
  const callers = new WeakMap<object, Caller>();
  const userBuilder: UserBuilder = async (call) => callers.get(call) ?? ANONYMOUS;
  const impl = grpcService({ requestHandler: handler, userBuilder }) as unknown as grpc.UntypedServiceImplementation;
  server.addService(A2AService, guarded(impl, auth, callers, activity));
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
    serve(handler, auth, activity) {
      if (added) return;
      added = true;
      addA2AService(server, handler, auth, activity);
    },
    close() {
      server.forceShutdown();
    },
  };
}

/** The gRPC binding of the A2A port: h2c connections handed over by the port's listener. */
export interface GrpcInjector {
  /** Serve this connection (its first bytes, the HTTP/2 preface, still unread in it) as gRPC. */
  inject(socket: Duplex): void;
  /** Close every gRPC connection at once (in-flight calls end CANCELLED/UNAVAILABLE). */
  close(): void;
}

/**
 * A grpc-js server with no port of its own, serving the A2A service over the connections it is
 * given (`createConnectionInjector`: grpc-js makes an HTTP/2 server and emits each injected
 * socket as its 'connection'). `idleMs`: a connection without a call for that long is sent GOAWAY,
 * the keep-alive budget of the HTTP bindings on the same port (0 = kept).
 */
export function grpcInjector(
  o: { maxBody: number; idleMs: number },
  handler: A2ARequestHandler,
  auth: Authenticator,
  activity: Activity | undefined,
): GrpcInjector {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': o.maxBody,
    ...(o.idleMs > 0 ? { 'grpc.max_connection_idle_ms': o.idleMs } : {}),
  });
  addA2AService(server, handler, auth, activity);
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  return {
    inject: (socket) => injector.injectConnection(socket),
    // Closes the injector's HTTP/2 server and destroys every session, the injected ones included.
    close: () => server.forceShutdown(),
  };
}
