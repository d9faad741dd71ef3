/**
 * The request handler: the SDK's `A2ARequestHandler` interface over the task machine (tasks/tasks.ts).
 * Every SDK transport (JSON-RPC, HTTP+JSON, gRPC) calls this one object, so every binding gets
 * the same validation, owner scoping and task semantics. What the SDK's DefaultRequestHandler
 * cannot express, and why this exists, is in docs/a2a.md ("What comes from @a2a-js/sdk").
 *
 * Errors are the SDK's transport-neutral A2A errors (RequestMalformedError → -32602 / HTTP 400 /
 * INVALID_ARGUMENT, TaskNotFoundError → -32001 / 404 / NOT_FOUND…); each transport maps them.
 *
 * The methods share one HandlerScope (scope.ts: options, lookups, intake, streams); the push-config
 * methods are push-configs.ts, the request checks request-checks.ts.
 */
import type { GetTaskRequest, CancelTaskRequest, ListTasksRequest, ListTasksResponse, SendMessageRequest, SubscribeToTaskRequest } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { ExtendedAgentCardNotConfiguredError, TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { ownerKey, taskNotFound } from '../tasks/task-record.ts';
import { applyHistoryLength, checkHistoryLength, checkListParams, requireId } from './request-checks.ts';
import { HandlerScope, type HandlerOptions } from './scope.ts';
import { pushConfigMethods } from './push-configs.ts';

export type { HandlerOptions } from './scope.ts';

export function createHandler(o: HandlerOptions): A2ARequestHandler {
  const s = new HandlerScope(o);
  return {
    async getAgentCard() {
      return o.card;
    },
    async getAuthenticatedExtendedAgentCard() {
      throw new ExtendedAgentCardNotConfiguredError('this capsule has no extended agent card');
    },
    ...taskMethods(s),
    ...pushConfigMethods(s),
  };
}

type TaskMethods = Pick<A2ARequestHandler, 'sendMessage' | 'sendMessageStream' | 'getTask' | 'cancelTask' | 'resubscribe' | 'listTasks'>;

/** Messages and tasks: send (a new task or a reply), stream, get, cancel, resubscribe, list. */
function taskMethods(s: HandlerScope): TaskMethods {
  return {
    async sendMessage(params, context) {
      let got = s.intake(params, context);
      if (typeof got === 'function') {
        const replica = await s.elsewhere(params.message!.taskId, context);
        if (replica) return s.o.remote!.reply(replica, remoteReply(params, context));
        // A waiting task whose runner is gone may have been adopted here just now (replicas.ts).
        got = s.machine.isLive(params.message!.taskId) ? s.intake(params, context) : got;
        if (typeof got === 'function') return got();
      }
      const { rec, go } = got;
      go();
      if (!params.configuration?.returnImmediately) await s.machine.waitFor(rec, () => rec.final || rec.state === 'input-required');
      // Answered once stored: the caller's next request may land on another replica, which reads the store.
      await rec.saving;
      return s.machine.snapshot(rec, params.configuration?.historyLength);
    },
    sendMessageStream(params, context) {
      // The SDK iterates the generator only after this returns; validation happens on the first
      // `next()`, before anything is yielded, so the SDK still answers a refusal as a plain error.
      const got = s.intake(params, context);
      if (typeof got === 'function') {
        return (async function* () {
          const replica = await s.elsewhere(params.message!.taskId, context);
          if (replica) return yield* s.o.remote!.replyStream(replica, remoteReply(params, context));
          // A waiting task whose runner is gone may have been adopted here just now (replicas.ts).
          const again = s.machine.isLive(params.message!.taskId) ? s.intake(params, context) : got;
          if (typeof again === 'function') return void (await again());
          yield* s.stream(again.rec, context, s.machine.snapshot(again.rec, params.configuration?.historyLength), again.go);
        })();
      }
      return s.stream(got.rec, context, s.machine.snapshot(got.rec, params.configuration?.historyLength), got.go);
    },
    async getTask(params: GetTaskRequest, context) {
      checkHistoryLength(params.historyLength, 'historyLength');
      let task = await s.machine.load(requireId(params.id), context);
      if (!task) throw taskNotFound(params.id);
      // Unfinished and not here: if its runner died, runner() fails it in the store; read it again.
      if (s.o.remote && !s.machine.isLive(params.id) && !(await s.elsewhere(params.id, context))) task = (await s.machine.load(params.id, context)) ?? task;
      return applyHistoryLength(task, params.historyLength);
    },
    async cancelTask(params: CancelTaskRequest, context) {
      const rec = s.machine.find(requireId(params.id), context);
      if (!rec) {
        // A task that is no longer live has ended: not cancelable; an unknown one is not found.
        const stored = await s.machine.load(params.id, context);
        if (!stored) throw taskNotFound(params.id);
        const replica = await s.elsewhere(params.id, context);
        if (replica) return s.o.remote!.cancel(replica, params.id, ownerKey(context));
        throw new TaskNotCancelableError({ message: `task ${params.id} has already ended and cannot be canceled`, metadata: { taskId: params.id } });
      }
      s.machine.cancel(rec);
      return s.machine.snapshot(rec);
    },
    resubscribe(params: SubscribeToTaskRequest, context) {
      const rec = s.machine.find(requireId(params.id), context);
      if (!rec && s.machine.isLive(params.id)) throw taskNotFound(params.id); // another caller's task
      if (!rec) {
        const id = params.id;
        return (async function* () {
          const replica = await s.elsewhere(id, context);
          if (!replica) return void (await s.notLive(id, context, `task ${id} has ended; use tasks/get for its result`));
          yield* s.o.remote!.subscribe(replica, id, ownerKey(context));
        })();
      }
      if (rec.final) throw new UnsupportedOperationError(`task ${rec.id} is already ${rec.state}; use tasks/get for its result`);
      return s.stream(rec, context, s.machine.snapshot(rec));
    },
    async listTasks(params: ListTasksRequest, context): Promise<ListTasksResponse> {
      checkListParams(params);
      await s.machine.flush();
      const pageSize = params.pageSize ?? 50;
      const res = await s.machine.store.list({ ...params, pageSize }, context);
      for (const t of res.tasks) applyHistoryLength(t, params.historyLength ?? 0);
      return res;
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
