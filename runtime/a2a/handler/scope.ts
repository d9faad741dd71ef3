/**
 * What the request handler's methods (handler.ts, push-configs.ts) share: the options with their
 * defaults, and the lookups every method makes on the task machine: the caller's live task, a task
 * that ended or runs on another replica, a message taken in as a reply or a new task, a task's
 * stream, the caller's push configs.
 */
import type { AgentCard, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { PushNotificationNotSupportedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { isTerminal, type TaskOrigin, type TaskTrust } from '../core/executor.ts';
import { fromCoreState, parseOriginTrust, validTraceparent } from '../core/wire.ts';
import type { StreamSink } from '../tasks/stream.ts';
import type { Push } from '../peers/push.ts';
import { PushQuota } from '../peers/push-limits.ts';
import type { TaskMachine } from '../tasks/tasks.ts';
import { ownerKey, taskNotFound, type TaskRecord } from '../tasks/task-record.ts';
import type { RemoteTasks } from '../tasks/replicas.ts';
import { checkHistoryLength, headersOf, invalidParams, validateMessage } from './request-checks.ts';

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
  /** Push notifications (../peers/push.ts); without it every push method is PushNotificationNotSupported. */
  push?: Push;
  /** Bounds on push configs (../peers/push-limits.ts). Default: the default bounds. */
  pushQuota?: PushQuota;
  /**
   * Replicas on a shared store (../tasks/replicas.ts): a task not live here may run on another replica,
   * which then takes its cancel, its input reply and its streams. Without it, a task not live here
   * has ended (one process owns every task it runs).
   */
  remote?: RemoteTasks;
}

const NEVER_RESTARTED = 'terminal tasks are never restarted — send a new message without taskId (same contextId) to start a new task';

/** A message taken in: the task it is for and what starts it (`go`), or the answer for a task not live here. */
export type Intake = { rec: TaskRecord; go: () => void } | (() => Promise<never>);

export class HandlerScope {
  readonly machine: TaskMachine;
  readonly quota: PushQuota;
  private readonly originTrust: (context: ServerCallContext) => { origin: TaskOrigin; trust: TaskTrust };
  private readonly sinkOf: (context: ServerCallContext) => StreamSink | undefined;

  constructor(readonly o: HandlerOptions) {
    this.machine = o.machine;
    this.originTrust = o.originTrust ?? ((c: ServerCallContext) => parseOriginTrust(headersOf(c)));
    this.sinkOf = o.sinkOf ?? (() => undefined);
    this.quota = o.pushQuota ?? new PushQuota();
  }

  /** Why a message for a task that is not live fails: it ended (the store has it) or it is unknown. */
  async notLive(id: string, context: ServerCallContext, ended: string): Promise<never> {
    if (this.machine.isLive(id)) throw taskNotFound(id); // live, so the store has it only under its owner
    if (!(await this.machine.load(id, context))) throw taskNotFound(id);
    throw new UnsupportedOperationError(ended);
  }

  /**
   * The replica running a task that is not live here: the caller's own task (the store scopes by
   * owner), still unfinished in the store, claimed by another live replica. Undefined otherwise,
   * and the local answer (ended, or not found) applies.
   */
  async elsewhere(id: string, context: ServerCallContext): Promise<string | undefined> {
    if (!this.o.remote || this.machine.isLive(id)) return undefined;
    const stored = await this.machine.load(id, context);
    const state = stored ? fromCoreState(stored.status?.state) : undefined;
    if (!stored || (state !== undefined && isTerminal(state))) return undefined;
    return this.o.remote.runner(id);
  }

  /**
   * Resolve a message: a reply to the caller's input-required task (reply delivered by `go`), or
   * a new task (created `submitted`; `go` admits it). Synchronous, so a stream's refusal is a
   * plain error answer (the SDK logs a stack for errors thrown from inside a stream); only a
   * `taskId` that is no longer live needs the store, and answers through the returned function.
   */
  intake(params: SendMessageRequest, context: ServerCallContext): Intake {
    checkHistoryLength(params.configuration?.historyLength, 'configuration.historyLength');
    const m = validateMessage(params.message, this.o.card.defaultInputModes);
    if (m.taskId) {
      const rec = this.machine.find(m.taskId, context);
      if (!rec && this.machine.isLive(m.taskId)) throw taskNotFound(m.taskId); // another caller's task
      if (!rec) return () => this.notLive(m.taskId!, context, `task ${m.taskId} has ended; ${NEVER_RESTARTED}`);
      if (m.contextId && m.contextId !== rec.contextId) {
        throw invalidParams(`message.contextId '${m.contextId}' does not match task ${rec.id}'s contextId '${rec.contextId}'`);
      }
      return { rec, go: this.machine.replyTo(rec, m) };
    }
    const pushConfig = params.configuration?.taskPushNotificationConfig;
    if (pushConfig) {
      if (!this.o.push) throw new PushNotificationNotSupportedError('push notifications are not supported; use message/stream or tasks/get');
      this.quota.checkUrl(pushConfig.url);
      this.o.push.check(pushConfig);
      this.quota.checkCaller(ownerKey(context));
    }
    const { origin, trust } = this.originTrust(context);
    const rec = this.machine.create({ message: m, origin, trust, traceparent: validTraceparent(headersOf(context).traceparent), caller: context });
    if (pushConfig) {
      // Saved before the task is admitted, so its first status change is already pushed.
      const cfg = { ...pushConfig, taskId: rec.id };
      return {
        rec,
        go: () => {
          void this.o.push!.store.save(rec.id, context, cfg).then(() => {
            this.quota.count(rec.owner, rec.id, 1);
            this.machine.admit(rec);
          });
        },
      };
    }
    this.o.push?.created(rec.id);
    return { rec, go: () => this.machine.admit(rec) };
  }

  pushOf(): Push {
    if (!this.o.push) throw new PushNotificationNotSupportedError('push notifications are not supported; use message/stream or tasks/get');
    return this.o.push;
  }

  /** Whether a task of the caller's still runs here, so its push configs may still be used. */
  pushes(taskId: string, context: ServerCallContext): boolean {
    const rec = this.machine.find(taskId, context);
    return rec !== undefined && !rec.final;
  }

  /**
   * A config id, or the default one: under A2A 0.3 a config set, read or deleted without an id
   * has the task's id (the 0.3 SDKs and TCK do so; 1.0 leaves the id to the server, which the
   * store makes a UUID).
   */
  configId(id: string | undefined, taskId: string, context: ServerCallContext): string | undefined {
    return !id && context.requestedVersion === '0.3' ? taskId : id;
  }

  /** The caller's own task (live or stored), or not found: a config is only set on one's own task. */
  async ownTask(taskId: string, context: ServerCallContext): Promise<void> {
    if (!taskId) throw invalidParams('taskId (the task id) is required');
    if (this.machine.find(taskId, context)) return;
    if (!(await this.machine.load(taskId, context))) throw taskNotFound(taskId);
  }

  /** A stream of `rec`'s events, `first` (the task) ahead of them; `go` starts the task once `first` is out. */
  stream(rec: TaskRecord, context: ServerCallContext, first: Task, go?: () => void): AsyncGenerator<StreamResponse, void, undefined> {
    const machine = this.machine;
    const sub = machine.subscribe(rec, this.sinkOf(context));
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
}
