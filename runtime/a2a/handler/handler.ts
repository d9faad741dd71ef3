/**
 * The request handler: the SDK's `A2ARequestHandler` interface over the task machine (tasks.ts).
 * Every SDK transport (JSON-RPC, HTTP+JSON, gRPC) calls this one object, so every binding gets
 * the same validation, owner scoping and task semantics. What the SDK's DefaultRequestHandler
 * cannot express, and why this exists, is in docs/a2a.md ("What comes from @a2a-js/sdk").
 *
 * Errors are the SDK's transport-neutral A2A errors (RequestMalformedError → -32602 / HTTP 400 /
 * INVALID_ARGUMENT, TaskNotFoundError → -32001 / 404 / NOT_FOUND…); each transport maps them.
 */
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  ListTaskPushNotificationConfigsResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { Role, TaskState, type Part } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import {
  ContentTypeNotSupportedError,
  ExtendedAgentCardNotConfiguredError,
  TaskNotCancelableError,
  TaskNotFoundError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { TaskOrigin, TaskTrust } from '../core/executor.ts';
import { messageText, parseOriginTrust, validTraceparent } from '../core/wire.ts';
import type { StreamSink } from '../tasks/stream.ts';
import type { Push } from '../peers/push.ts';
import { PushQuota } from '../peers/push-limits.ts';
import type { TaskMachine } from '../tasks/tasks.ts';
import { ownerKey, taskNotFound, type TaskRecord } from '../tasks/task-record.ts';
import type { RemoteTasks } from '../tasks/replicas.ts';
import { fromCoreState } from '../core/wire.ts';
import { isTerminal } from '../core/executor.ts';

export interface HandlerOptions {
  machine: TaskMachine;
  card: AgentCard;
  /**
   * Origin and trust of a call. Default: the `x-murmur-task-origin` / `x-murmur-task-trust`
   * headers (parseOriginTrust).
   */
  originTrust?: (context: ServerCallContext) => { origin: TaskOrigin; trust: TaskTrust };
  /** The connection a stream is written to, for backpressure (SSE); undefined when unknown. */
  sinkOf?: (context: ServerCallContext) => StreamSink | undefined;
  /** Push notifications (push.ts); without it every push method is PushNotificationNotSupported. */
  push?: Push;
  /** Bounds on push configs (push-limits.ts). Default: the default bounds. */
  pushQuota?: PushQuota;
  /**
   * Replicas on a shared store (replicas.ts): a task not live here may run on another replica,
   * which then takes its cancel, its input reply and its streams. Without it, a task not live here
   * has ended (one process owns every task it runs).
   */
  remote?: RemoteTasks;
}

const NEVER_RESTARTED = 'terminal tasks are never restarted — send a new message without taskId (same contextId) to start a new task';

export const invalidParams = (message: string) => new RequestMalformedError(message);

export function headersOf(context: ServerCallContext): Record<string, string | string[] | undefined> {
  const h = context.state.get('headers');
  return (h && typeof h === 'object' ? h : {}) as Record<string, string | string[] | undefined>;
}

/** The media type of a part: its own `mediaType`, else text/plain for text and application/json for data. */
function partMediaType(p: Part): string {
  if (p.mediaType) return p.mediaType.split(';')[0]!.trim().toLowerCase();
  if (p.content?.$case === 'text') return 'text/plain';
  if (p.content?.$case === 'data') return 'application/json';
  return 'application/octet-stream';
}

/** Whether a media type matches one of the card's input modes (`type/*` and `*\/*` included). */
function modeMatches(type: string, modes: readonly string[]): boolean {
  const major = type.split('/')[0];
  return modes.some((m) => m === type || m === '*/*' || m === `${major}/*`);
}

function validateMessage(m: Message | undefined, inputModes: readonly string[]): Message {
  if (!m) throw invalidParams("params.message is required: {messageId, role: 'user', parts: [{text}]}");
  if (!m.messageId) throw invalidParams('message.messageId is required (a sender-generated unique id, e.g. a uuid)');
  if (m.role !== Role.ROLE_USER) throw invalidParams("message.role must be 'user' (1.0: 'ROLE_USER')");
  if (!Array.isArray(m.parts) || m.parts.length === 0) throw invalidParams('message.parts must hold at least one part');
  const types = m.parts.map(partMediaType);
  if (!types.some((t) => modeMatches(t, inputModes))) {
    throw new ContentTypeNotSupportedError(
      `no part of the message has a media type this agent accepts: got ${[...new Set(types)].join(', ')}; the card's input modes are ${inputModes.join(', ')}`,
    );
  }
  if (messageText(m) === '') throw invalidParams('message has no text or data part with content');
  return m;
}

const VALID_STATES = new Set<number>([
  TaskState.TASK_STATE_SUBMITTED,
  TaskState.TASK_STATE_WORKING,
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

/** RFC 3339 / ISO 8601 date-time with a zone (`Z` or ±hh:mm), as A2A timestamps are. */
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function checkHistoryLength(n: number | undefined, where: string): void {
  if (n !== undefined && (!Number.isInteger(n) || n < 0)) {
    throw invalidParams(`${where} must be a non-negative integer (0 = no history), got ${String(n)}`);
  }
}

/** ListTasks parameters, refused rather than clamped (A2A 1.0 §3.1.4: -32602 for invalid ones). */
function checkListParams(p: ListTasksRequest): void {
  if (p.pageSize !== undefined && (!Number.isInteger(p.pageSize) || p.pageSize < 1 || p.pageSize > 100)) {
    throw invalidParams(`pageSize must be an integer from 1 to 100, got ${String(p.pageSize)}`);
  }
  if (p.status !== undefined && p.status !== TaskState.TASK_STATE_UNSPECIFIED && !VALID_STATES.has(p.status)) {
    throw invalidParams('status must be a task state such as TASK_STATE_WORKING');
  }
  if (p.statusTimestampAfter !== undefined && p.statusTimestampAfter !== '') {
    if (!TIMESTAMP_RE.test(p.statusTimestampAfter) || Number.isNaN(Date.parse(p.statusTimestampAfter))) {
      throw invalidParams(`statusTimestampAfter must be an ISO 8601 timestamp such as 2026-01-01T00:00:00.000Z, got '${p.statusTimestampAfter}'`);
    }
  }
  checkHistoryLength(p.historyLength, 'historyLength');
}

function requireId(id: string | undefined): string {
  if (!id) throw invalidParams('params.id (the task id) is required');
  return id;
}

export function createHandler(o: HandlerOptions): A2ARequestHandler {
  const { machine } = o;
  const originTrust = o.originTrust ?? ((c: ServerCallContext) => parseOriginTrust(headersOf(c)));
  const sinkOf = o.sinkOf ?? (() => undefined);
  const quota = o.pushQuota ?? new PushQuota();

  /** The caller's own live task, or the A2A not-found error. */
  function liveRec(id: string, context: ServerCallContext): TaskRecord {
    const rec = machine.find(requireId(id), context);
    if (!rec) throw taskNotFound(id);
    return rec;
  }

  /** Why a message for a task that is not live fails: it ended (the store has it) or it is unknown. */
  async function notLive(id: string, context: ServerCallContext, ended: string): Promise<never> {
    if (machine.isLive(id)) throw taskNotFound(id); // live, so the store has it only under its owner
    if (!(await machine.load(id, context))) throw taskNotFound(id);
    throw new UnsupportedOperationError(ended);
  }

  /**
   * The replica running a task that is not live here: the caller's own task (the store scopes by
   * owner), still unfinished in the store, claimed by another live replica. Undefined otherwise,
   * and the local answer (ended, or not found) applies.
   */
  async function elsewhere(id: string, context: ServerCallContext): Promise<string | undefined> {
    if (!o.remote || machine.isLive(id)) return undefined;
    const stored = await machine.load(id, context);
    const state = stored ? fromCoreState(stored.status?.state) : undefined;
    if (!stored || (state !== undefined && isTerminal(state))) return undefined;
    return o.remote.runner(id);
  }

  /**
   * Resolve a message: a reply to the caller's input-required task (reply delivered by `go`), or
   * a new task (created `submitted`; `go` admits it). Synchronous, so a stream's refusal is a
   * plain error answer (the SDK logs a stack for errors thrown from inside a stream); only a
   * `taskId` that is no longer live needs the store, and answers through the returned function.
   */
  function intake(params: SendMessageRequest, context: ServerCallContext): { rec: TaskRecord; go: () => void } | (() => Promise<never>) {
    checkHistoryLength(params.configuration?.historyLength, 'configuration.historyLength');
    const m = validateMessage(params.message, o.card.defaultInputModes);
    if (m.taskId) {
      const rec = machine.find(m.taskId, context);
      if (!rec && machine.isLive(m.taskId)) throw taskNotFound(m.taskId); // another caller's task
      if (!rec) return () => notLive(m.taskId!, context, `task ${m.taskId} has ended; ${NEVER_RESTARTED}`);
      if (m.contextId && m.contextId !== rec.contextId) {
        throw invalidParams(`message.contextId '${m.contextId}' does not match task ${rec.id}'s contextId '${rec.contextId}'`);
      }
      return { rec, go: machine.replyTo(rec, m) };
    }
    const pushConfig = params.configuration?.taskPushNotificationConfig;
    if (pushConfig) {
      if (!o.push) throw new PushNotificationNotSupportedError('push notifications are not supported; use message/stream or tasks/get');
      quota.checkUrl(pushConfig.url);
      o.push.check(pushConfig);
      quota.checkCaller(ownerKey(context));
    }
    const { origin, trust } = originTrust(context);
    const rec = machine.create({ message: m, origin, trust, traceparent: validTraceparent(headersOf(context)['traceparent']), caller: context });
    if (pushConfig) {
      // Saved before the task is admitted, so its first status change is already pushed.
      const cfg = { ...pushConfig, taskId: rec.id };
      return {
        rec,
        go: () => {
          void o.push!.store.save(rec.id, context, cfg).then(() => {
            quota.count(rec.owner, rec.id, 1);
            machine.admit(rec);
          });
        },
      };
    }
    return { rec, go: () => machine.admit(rec) };
  }

  function pushOf(): Push {
    if (!o.push) throw new PushNotificationNotSupportedError('push notifications are not supported; use message/stream or tasks/get');
    return o.push;
  }

  /** Whether a task of the caller's still runs here, so its push configs may still be used. */
  function pushes(taskId: string, context: ServerCallContext): boolean {
    const rec = machine.find(taskId, context);
    return rec !== undefined && !rec.final;
  }

  /**
   * A config id, or the default one: under A2A 0.3 a config set, read or deleted without an id
   * has the task's id (the 0.3 SDKs and TCK do so; 1.0 leaves the id to the server, which the
   * store makes a UUID).
   */
  function configId(id: string | undefined, taskId: string, context: ServerCallContext): string | undefined {
    return !id && context.requestedVersion === '0.3' ? taskId : id;
  }

  /** The caller's own task (live or stored), or not found: a config is only set on one's own task. */
  async function ownTask(taskId: string, context: ServerCallContext): Promise<void> {
    if (!taskId) throw invalidParams('taskId (the task id) is required');
    if (machine.find(taskId, context)) return;
    if (!(await machine.load(taskId, context))) throw taskNotFound(taskId);
  }

  function stream(rec: TaskRecord, context: ServerCallContext, first: Task, go?: () => void): AsyncGenerator<StreamResponse, void, undefined> {
    const sub = machine.subscribe(rec, sinkOf(context));
    return (async function* () {
      const it = machine.events(rec, sub);
      try {
        // Each event that a caller may act on elsewhere (the task itself, a status) goes out once
        // stored, so the next request, on whichever replica, finds the task in that state.
        await rec.saving;
        yield { payload: { $case: 'task', value: first } } as StreamResponse;
        go?.();
        for await (const resp of it) {
          if (resp.payload?.$case === 'statusUpdate') await rec.saving;
          yield resp;
        }
      } finally {
        await it.return(undefined);
      }
    })();
  }

  return {
    async getAgentCard() {
      return o.card;
    },
    async getAuthenticatedExtendedAgentCard() {
      throw new ExtendedAgentCardNotConfiguredError('this capsule has no extended agent card');
    },
    async sendMessage(params, context) {
      const got = intake(params, context);
      if (typeof got === 'function') {
        const replica = await elsewhere(params.message!.taskId, context);
        if (!replica) return got();
        return o.remote!.reply(replica, remoteReply(params, context));
      }
      const { rec, go } = got;
      go();
      if (!params.configuration?.returnImmediately) await machine.waitFor(rec, () => rec.final || rec.state === 'input-required');
      // Answered once stored: the caller's next request may land on another replica, which reads the store.
      await rec.saving;
      return machine.snapshot(rec, params.configuration?.historyLength);
    },
    sendMessageStream(params, context) {
      // The SDK iterates the generator only after this returns; validation happens on the first
      // `next()`, before anything is yielded, so the SDK still answers a refusal as a plain error.
      const got = intake(params, context);
      if (typeof got === 'function') {
        return (async function* () {
          const replica = await elsewhere(params.message!.taskId, context);
          if (!replica) return void (await got());
          yield* o.remote!.replyStream(replica, remoteReply(params, context));
        })();
      }
      return stream(got.rec, context, machine.snapshot(got.rec, params.configuration?.historyLength), got.go);
    },
    async getTask(params: GetTaskRequest, context) {
      checkHistoryLength(params.historyLength, 'historyLength');
      let task = await machine.load(requireId(params.id), context);
      if (!task) throw taskNotFound(params.id);
      // Unfinished and not here: if its runner died, runner() fails it in the store; read it again.
      if (o.remote && !machine.isLive(params.id) && !(await elsewhere(params.id, context))) task = (await machine.load(params.id, context)) ?? task;
      return applyHistoryLength(task, params.historyLength);
    },
    async cancelTask(params: CancelTaskRequest, context) {
      const rec = machine.find(requireId(params.id), context);
      if (!rec) {
        // A task that is no longer live has ended: not cancelable; an unknown one is not found.
        const stored = await machine.load(params.id, context);
        if (!stored) throw taskNotFound(params.id);
        const replica = await elsewhere(params.id, context);
        if (replica) return o.remote!.cancel(replica, params.id, ownerKey(context));
        throw new TaskNotCancelableError({ message: `task ${params.id} has already ended and cannot be canceled`, metadata: { taskId: params.id } });
      }
      machine.cancel(rec);
      return machine.snapshot(rec);
    },
    resubscribe(params: SubscribeToTaskRequest, context) {
      const rec = machine.find(requireId(params.id), context);
      if (!rec && machine.isLive(params.id)) throw taskNotFound(params.id); // another caller's task
      if (!rec) {
        const id = params.id;
        return (async function* () {
          const replica = await elsewhere(id, context);
          if (!replica) return void (await notLive(id, context, `task ${id} has ended; use tasks/get for its result`));
          yield* o.remote!.subscribe(replica, id, ownerKey(context));
        })();
      }
      if (rec.final) throw new UnsupportedOperationError(`task ${rec.id} is already ${rec.state}; use tasks/get for its result`);
      return stream(rec, context, machine.snapshot(rec));
    },
    async listTasks(params: ListTasksRequest, context): Promise<ListTasksResponse> {
      checkListParams(params);
      await machine.flush();
      const pageSize = params.pageSize ?? 50;
      const res = await machine.store.list({ ...params, pageSize }, context);
      for (const t of res.tasks) applyHistoryLength(t, params.historyLength ?? 0);
      return res;
    },
    async createTaskPushNotificationConfig(params, context): Promise<TaskPushNotificationConfig> {
      const push = pushOf();
      await ownTask(params.taskId, context);
      quota.checkUrl(params.url);
      push.check(params);
      const cfg = { ...params, id: configId(params.id, params.taskId, context) ?? '' };
      // The store assigns cfg.id when it is still empty.
      await quota.save(push.store, cfg, context, ownerKey(context), pushes(params.taskId, context));
      return cfg;
    },
    async getTaskPushNotificationConfig(params, context): Promise<TaskPushNotificationConfig> {
      const push = pushOf();
      await ownTask(params.taskId, context);
      const id = configId(params.id, params.taskId, context);
      const found = (await push.store.load(params.taskId, context)).find((c) => c.id === id);
      if (!found) throw new TaskNotFoundError({ message: `no push notification config '${id}' on task '${params.taskId}'`, metadata: { taskId: params.taskId } });
      return found;
    },
    async listTaskPushNotificationConfigs(params, context): Promise<ListTaskPushNotificationConfigsResponse> {
      const push = pushOf();
      await ownTask(params.taskId, context);
      return { configs: await push.store.load(params.taskId, context), nextPageToken: '' };
    },
    async deleteTaskPushNotificationConfig(params, context): Promise<void> {
      const push = pushOf();
      await ownTask(params.taskId, context);
      const id = configId(params.id, params.taskId, context);
      await quota.delete(push.store, params.taskId, id, context, ownerKey(context), pushes(params.taskId, context));
    },
  };
}

function remoteReply(params: SendMessageRequest, context: ServerCallContext) {
  return {
    id: params.message!.taskId,
    owner: ownerKey(context),
    message: params.message!,
    ...(params.configuration?.historyLength !== undefined ? { historyLength: params.configuration.historyLength } : {}),
    ...(params.configuration?.returnImmediately ? { returnImmediately: true } : {}),
  };
}

function applyHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength !== undefined) task.history = historyLength <= 0 ? [] : (task.history ?? []).slice(-historyLength);
  return task;
}
