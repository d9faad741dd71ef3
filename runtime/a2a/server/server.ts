/**
 * The capsule's A2A server, composed from its parts:
 * - ../tasks/tasks.ts: the task state machine (acceptance none/single/queue, request-input, cancel,
 *   one final status), saving every change to the injected `TaskStore` (the SDK's interface);
 * - ../handler/handler.ts: the SDK's `A2ARequestHandler` over that machine (validation, owner scoping);
 * - ../tasks/stream.ts: bounded stream subscribers;
 * - json-rpc.ts: JSON-RPC at `POST /` over plain node:http (front-door.ts: authentication, body
 *   limit and envelope/version/method checks before the SDK's transport handlers, which do method
 *   dispatch, 0.3 ⇄ 1.0 shape translation and error envelopes; json-rpc-answer.ts: the answer, SSE);
 * - routes.ts: every other HTTP route on an express app (health, readiness, card, HTTP+JSON);
 *   grpc.ts: the gRPC binding (grpc-same-port.ts: on the A2A port);
 * - card.ts: the agent card. See docs/a2a.md.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../../builtins.ts';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Request } from 'express';
import { InMemoryTaskStore, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { MurError } from '../../errors.ts';
import type { TaskExecutor } from '../core/executor.ts';
import { buildCardJson, buildCoreCard, cardVariants, type AgentCardInput, type CardEndpoints } from './card.ts';
import { mountRoutes } from './routes.ts';
import { ResponseOf } from './response-of.ts';
import { isJsonRpcRequest, jsonRpcTransport } from './json-rpc.ts';
import type { TaskParts } from './json-rpc-answer.ts';
import type { GrpcBinding } from './grpc.ts';
import { grpcOnSamePort } from './grpc-same-port.ts';
import { createHandler } from '../handler/handler.ts';
import { headersOf } from '../handler/request-checks.ts';
import { ANONYMOUS, OPEN, type Authenticator, type Caller } from './auth.ts';
import { TaskMachine } from '../tasks/tasks.ts';
import type { TaskAcceptance } from '../tasks/task-options.ts';
import { snapshotParts, type TaskRecord } from '../tasks/task-record.ts';
import { createPush, type Push, type PushOptions } from '../peers/push.ts';
import { PushQuota, type PushLimits } from '../peers/push-limits.ts';
import { applyConnectionLimits, resolveLimits, serverOptions, type ConnectionLimits } from './connection-limits.ts';
import type { RemoteTasks } from '../tasks/replicas.ts';
import type { ResumeStore } from '../store/resume-points.ts';
import type { StreamResponse } from '@a2a-js/sdk';
import type { Activity } from '../../telemetry/activity.ts';

export type { TaskAcceptance } from '../tasks/task-options.ts';
export { createAuthenticator, type Authenticator, type AuthConfig, type ApiKey, type TokenVerifier } from './auth.ts';
export { skillsFromTools, buildCardJson, type AgentCardInput, type SkillInput } from './card.ts';

export interface A2AServerOptions {
  card: AgentCardInput;
  executor: TaskExecutor;
  /** lifecycle.task_acceptance */
  acceptance: TaskAcceptance;
  /** lifecycle.queue_depth: how many tasks may wait behind the running one (queue mode). Default 16. */
  queueDepth?: number;
  /** lifecycle.input_timeout_secs: how long requestInput waits for a reply. Default: 3600 (the manifest's); 0 = no limit. */
  inputTimeoutSecs?: number;
  /** Bind address. Default 127.0.0.1. */
  host?: string;
  /** Port; 0 (default) = any free port. */
  port?: number;
  /** URL advertised in the agent card. Default `http://<host>:<port>/`. */
  publicUrl?: string;
  /** Serve the HTTP+JSON (REST) binding under `<url>rest`. Default true. */
  rest?: boolean;
  /**
   * Serve the gRPC binding on this port (0 = any free port), or `'same'`: on the A2A port itself,
   * h2c connections told apart by their preface (grpc-same-port.ts). Default: no gRPC.
   */
  grpcPort?: number | 'same';
  /** `host:port` advertised for gRPC. Default `<host>:<grpc port>`; with `'same'`, the host and port of the A2A URL. */
  grpcPublicAddress?: string;
  /**
   * Who may call, and whose trust header counts (auth.ts). Default: no credentials checked, every
   * caller anonymous and untrusted (local use only: `mur serve` refuses this off loopback).
   */
  auth?: Authenticator;
  /**
   * Push notifications: webhooks may only point where `allow` (the capsule's
   * capabilities.network.allow) lets the capsule connect; `limits` bounds the configs
   * (../peers/push-limits.ts: 10 per task, 100 per caller, URLs of 2048 characters). Default: not supported (-32003).
   */
  push?: PushOptions & { limits?: PushLimits };
  /** Largest accepted request body. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * Budgets of the HTTP connections (connection-limits.ts): headers 10 s, whole request 30 s,
   * keep-alive 65 s, 256 connections per remote address.
   */
  limits?: ConnectionLimits;
  /** Finished tasks kept live in memory (oldest dropped first; the task store keeps them). Default 1000. */
  maxStoredTasks?: number;
  /** Bytes of content (text, files, data) those finished tasks keep in memory at most. Default 4 MiB (../tasks/live-tasks.ts). */
  maxStoredTaskBytes?: number;
  /**
   * Where tasks are saved (the SDK's `TaskStore`: `InMemoryTaskStore`, or `DatabaseTaskStore` from
   * `@a2a-js/sdk/server/database`). It scopes tasks by caller. Default: a new InMemoryTaskStore.
   */
  taskStore?: TaskStore;
  /**
   * How long a task's `working` state may wait for its write to `taskStore` (a later write of the
   * task takes it along; ../tasks/task-saves.ts). Only for a store no other process reads: a status
   * event is then sent before its state is stored. Default 0 (at once).
   */
  workingSaveDelayMs?: number;
  /**
   * Replicas on a shared store (../tasks/replicas.ts): given the task machine, the client side of the other
   * replicas (cancel, input replies and streams of tasks they run). Default: this process alone.
   */
  replicate?: (machine: TaskMachine) => RemoteTasks;
  /**
   * Where the resume points of tasks waiting for input are kept (../store/resume-points.ts): a stop
   * leaves such a task `input-required`, and the server adopts the ones a stopped process left
   * before it listens (../tasks/resumable.ts). Default: none (a stop fails a waiting task).
   */
  resumePoints?: ResumeStore;
  /**
   * Told where each piece of work that keeps the capsule awake begins and ends (an unfinished task,
   * an authenticated A2A request on any binding, streams included): `capsule_idle_seconds`
   * (../../telemetry/activity.ts). Default: not told.
   */
  activity?: Activity;
  /** Per-SSE-subscriber bounds; past either, droppable events are dropped and a `lagged` notice sent. */
  stream?: {
    /** Events queued per subscriber before droppable ones are dropped. Default 256. */
    maxQueuedEvents?: number;
    /** Bytes buffered in the subscriber's HTTP response before droppable events are dropped. Default 1 MiB. */
    maxBufferedBytes?: number;
    /** Interval of `: heartbeat` SSE comments; 0 = none. Default 15000. */
    heartbeatMs?: number;
    /** Told after each heartbeat written to a stream. */
    onHeartbeat?: () => void;
  };
}

export interface A2AServer {
  /** Base URL, e.g. `http://127.0.0.1:40123/` (JSON-RPC endpoint; the card is under it). */
  readonly url: string;
  /** HTTP+JSON base URL (`<url>rest`), when served. */
  readonly restUrl: string | undefined;
  /** gRPC address (`host:port`), when served. */
  readonly grpcAddress: string | undefined;
  readonly port: number;
  /** The agent card as served (0.3 and 1.0 fields together). */
  readonly card: Record<string, unknown>;
  /** `single`: resolves when the one task has ended and its executor returned. Never resolves otherwise. */
  readonly done: Promise<void>;
  /** Resolves when no task is running or waiting (immediately if already idle). */
  idle(): Promise<void>;
  /**
   * Whether the server will ever take another task: false once a `single` capsule has its task, for
   * `none`, and while closing. A full queue is transient and does not count (readiness, not load).
   */
  acceptsMore(): boolean;
  /** Counters for tests and metrics; `streamResponses`: responses open and tracked for a stream subscriber's lookup (JSON-RPC streams, every HTTP+JSON request: response-of.ts). */
  stats(): { tasks: number; running: number; pending: number; subscribers: number; laggedDrops: number; streamResponses: number };
  /** `listener` runs after every task event and subscriber change; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  /** Resolves when every queued push notification has been delivered or given up. */
  pushIdle(): Promise<void>;
  /**
   * Graceful drain: /readyz turns 503 and new tasks are refused (retryable) at once; running and
   * queued tasks get `budgetMs` to finish, then fail with a reason. Resolves with how many failed so.
   */
  drain(budgetMs: number): Promise<number>;
  /** Tasks waiting in input-required. */
  waitingForInput(): number;
  /** Tasks a stopped process left waiting for input that this server adopted as it started (resumePoints). */
  readonly adopted: number;
  /** Cancel unfinished tasks, drop connections, stop listening. */
  close(): Promise<void>;
}

export async function startA2AServer(opts: A2AServerOptions): Promise<A2AServer> {
  const host = opts.host ?? '127.0.0.1';
  const maxBody = opts.maxBodyBytes ?? 1024 * 1024;
  const limits = resolveLimits(opts.limits);
  const push = opts.push ? createPush(opts.push) : undefined;
  const pushQuota = new PushQuota(opts.push?.limits);
  const machine = taskMachineOf(opts, push, pushQuota);
  // Before the first request: a reply to a task left waiting finds it live here.
  const adopted = await machine.adoptWaiting();
  // The SDK passes the request's headers object on in ServerCallContext; the front door maps it to
  // the response, so a stream subscriber can watch the bytes buffered in it.
  const resOf = new ResponseOf();

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // JSON-RPC at POST / is served without express (json-rpc.ts), once the handler exists; every
  // other request, and one that comes before, goes to the express app.
  let rpc: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = http.createServer(serverOptions(limits), (req, res) => {
    if (rpc !== undefined && isJsonRpcRequest(req)) rpc(req, res);
    else app(req, res);
  });
  // Before the connection limits wrap the listener: the per-client cap then counts h2c connections too.
  const samePort =
    opts.grpcPort === 'same' ? grpcOnSamePort(server, { maxBody, sniffTimeoutMs: limits.headersTimeoutMs, idleMs: limits.keepAliveTimeoutMs }) : undefined;
  const dropRefused = applyConnectionLimits(server, limits);
  await listen(server, host, opts.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = opts.publicUrl ?? `http://${urlHost}:${port}/`;
  // Imported only when a gRPC port is asked for: grpc-js and the SDK's gRPC service are heap a
  // JSON-RPC-only pod would carry for nothing, and ≈ 30 ms of CPU (profiled) at every start.
  // (On the A2A port, grpc-same-port.ts imports them on the first h2c connection.)
  const grpc: GrpcBinding | undefined =
    typeof opts.grpcPort === 'number' ? await (await import('./grpc.ts')).startGrpc(host, opts.grpcPort, maxBody) : undefined;
  const grpcAddress = grpc ? `${urlHost}:${grpc.port}` : samePort ? authorityOf(url) : undefined;
  const endpoints: CardEndpoints = {
    jsonrpc: url,
    ...(opts.rest !== false ? { rest: `${url}rest` } : {}),
    ...(grpcAddress ? { grpc: opts.grpcPublicAddress ?? grpcAddress } : {}),
  };
  const auth = opts.auth ?? OPEN;
  const security = auth.card();
  const cardInput = { ...opts.card, pushNotifications: push !== undefined };
  const card = buildCardJson(cardInput, endpoints, security);
  const cards = cardVariants(card, security);
  const remote = opts.replicate?.(machine);
  const handler = createHandler({
    machine,
    ...(remote ? { remote } : {}),
    card: buildCoreCard(cardInput, endpoints),
    ...(push ? { push, pushQuota } : {}),
    originTrust: (context) => auth.originTrust(context.user as Caller | undefined, headersOf(context)),
    sinkOf: (context) => resOf.get(context.state.get('headers') as object),
  });
  grpc?.serve(handler, auth, opts.activity);
  samePort?.serve(handler, auth, opts.activity);
  // The caller of each HTTP+JSON request, found by authDoor before the SDK builds its context.
  const callers = new WeakMap<object, Caller>();
  const userBuilder = async (req: Request) => callers.get(req) ?? ANONYMOUS;
  rpc = jsonRpcTransport({
    handler,
    auth,
    resOf,
    maxBody,
    draining: () => machine.isDraining(),
    ...(opts.activity ? { activity: opts.activity } : {}),
    // Not with replicas: a task read there may be answered from another replica or the store.
    ...(remote ? {} : { taskParts: taskPartsOf(machine) }),
  });
  mountRoutes(app, {
    acceptance: opts.acceptance,
    machine,
    handler,
    auth,
    callers,
    userBuilder,
    resOf,
    cards,
    maxBody,
    rest: endpoints.rest !== undefined,
    ...(opts.activity ? { activity: opts.activity } : {}),
  });

  let closed = false;
  return {
    url,
    restUrl: endpoints.rest,
    grpcAddress: endpoints.grpc,
    port,
    card,
    done: machine.done,
    idle: () => machine.idle(),
    acceptsMore: () => machine.acceptsMore(),
    stats: () => ({ ...machine.stats(), streamResponses: resOf.open }),
    onChange: (l) => machine.onChange(l),
    pushIdle: async () => push?.idle(),
    drain: (budgetMs) => machine.drain(budgetMs),
    waitingForInput: () => machine.waitingForInput(),
    adopted,
    async close() {
      if (closed) return;
      closed = true;
      await machine.close();
      await push?.idle();
      grpc?.close();
      await samePort?.close();
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
        dropRefused();
      });
    },
  };
}

/** The task machine of a server, its defaults filled in; with push, every event is offered for delivery. */
function taskMachineOf(opts: A2AServerOptions, push: Push | undefined, pushQuota: PushQuota): TaskMachine {
  const onEvent = (rec: TaskRecord, resp: StreamResponse) => {
    push!.deliver(rec.id, rec.ownerContext, resp);
    if (rec.final) pushQuota.ended(rec.owner, rec.id);
  };
  return new TaskMachine({
    ...(push ? { onEvent } : {}),
    ...(opts.activity ? { activity: opts.activity } : {}),
    ...(opts.resumePoints ? { resumePoints: opts.resumePoints } : {}),
    executor: opts.executor,
    acceptance: opts.acceptance,
    queueDepth: opts.queueDepth ?? 16,
    ...(opts.inputTimeoutSecs !== undefined ? { inputTimeoutSecs: opts.inputTimeoutSecs } : {}),
    maxLiveTasks: opts.maxStoredTasks ?? 1000,
    ...(opts.maxStoredTaskBytes !== undefined ? { maxLiveBytes: opts.maxStoredTaskBytes } : {}),
    ...(opts.workingSaveDelayMs !== undefined ? { workingSaveDelayMs: opts.workingSaveDelayMs } : {}),
    store: opts.taskStore ?? new InMemoryTaskStore(),
    stream: {
      maxQueued: opts.stream?.maxQueuedEvents ?? 256,
      maxBuffered: opts.stream?.maxBufferedBytes ?? 1024 * 1024,
      heartbeatMs: opts.stream?.heartbeatMs ?? 15_000,
      ...(opts.stream?.onHeartbeat ? { onHeartbeat: opts.stream.onHeartbeat } : {}),
    },
  });
}

/**
 * `host:port` of a URL, the form gRPC clients dial (a default port spelled out): the gRPC binding
 * on the A2A port is reached where the A2A URL points, its path aside (gRPC has none).
 */
export function authorityOf(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/** Listens on host:port; a port in use (or any listen error) is E-A2A-001 naming the address. */
function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onErr = (e: NodeJS.ErrnoException) =>
      reject(
        new MurError('E-A2A-001', `cannot listen on ${host}:${port}: ${e.code ?? e.message}`, {
          hint: 'pick a free port (network.internal_port) or stop the process holding it',
          cause: e,
        }),
      );
    server.once('error', onErr);
    server.listen(port, host, () => {
      server.off('error', onErr);
      resolve();
    });
  });
}

/** The snapshot parts of a task the caller owns in `machine`'s memory: what the answer memo checks (json-rpc-answer.ts). */
export function taskPartsOf(machine: TaskMachine): TaskParts {
  return (id: string, context: ServerCallContext) => {
    const rec = machine.find(id, context);
    return rec && snapshotParts(rec);
  };
}
