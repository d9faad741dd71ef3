/**
 * The calls `mur send`, `mur chat` and `mur tasks` make, over whatever binding the connection
 * chose: a streamed send (steps as they happen, then the outcome), get, cancel, list.
 */
import type { ListTasksResponse, Message, Task } from '@a2a-js/sdk';
import { TaskState as CoreTaskState } from '@a2a-js/sdk';
import { isTerminal, type TaskState } from '../a2a/core/executor.ts';
import { toCoreState } from '../a2a/core/wire.ts';
import { clientFailure, type AgentConnection } from './connect.ts';
import { answerOf, statusText, stepsOf, taskState, type StepEvent } from './stream-events.ts';

export interface TaskOutcome {
  taskId: string;
  contextId: string;
  state: TaskState;
  /** The answer (the `response` artifact) when there is one. */
  answer?: string;
  /** The status message: the prompt when input-required, the reason when failed. */
  statusText?: string;
}

export function outcomeOf(t: Task): TaskOutcome {
  const state = taskState(t);
  const s = statusText(t.status?.message);
  const answer = state === 'completed' ? answerOf(t) : undefined;
  return { taskId: t.id, contextId: t.contextId, state, ...(answer !== undefined ? { answer } : {}), ...(s ? { statusText: s } : {}) };
}

/** Reattachments after a stream broke off before the task's end, before giving up. */
const MAX_REATTACH = 3;

/** A broken connection (reset, closed mid-stream), as opposed to an answer from the capsule. */
function connectionLost(e: unknown): boolean {
  const err = e as { message?: string; cause?: { code?: unknown; message?: string } };
  return (
    err?.message === 'terminated' || err?.message === 'fetch failed' || (typeof err?.cause?.code === 'string' && /^(UND_ERR_|ECONN|EPIPE)/.test(err.cause.code))
  );
}

/**
 * Sends `message` and follows the task to its end or to `input-required`, telling `onStep` each
 * step. A stream that breaks off before that (a dropped connection, a port-forward cut) is not
 * the task's end: the client re-attaches to the task (SubscribeToTask, which starts with the
 * task's current state) up to three times, and reads a task that ended meanwhile with GetTask.
 * A card without streaming gets a blocking send.
 */
export async function sendAndFollow(conn: AgentConnection, message: Message, onStep: (e: StepEvent) => void, signal?: AbortSignal): Promise<TaskOutcome> {
  const params = { tenant: '', message, configuration: undefined, metadata: undefined };
  if (!conn.card.capabilities?.streaming) {
    try {
      const r = await conn.client.sendMessage(params, conn.options(signal));
      if ('messageId' in r) return { taskId: r.taskId, contextId: r.contextId, state: 'completed', answer: statusText(r as Message) };
      return outcomeOf(r as Task);
    } catch (e) {
      throw clientFailure(e, conn.name, 'sending the task', conn.detail?.());
    }
  }
  let taskId = message.taskId;
  let contextId = message.contextId;
  let last: TaskOutcome | undefined;
  let answer: string | undefined;
  let stream = conn.client.sendMessageStream(params, conn.options(signal));
  for (let attempt = 0; ; attempt++) {
    try {
      for await (const resp of stream) {
        for (const e of stepsOf(resp)) {
          if (e.kind === 'task') ({ taskId, contextId } = e);
          // A re-attached stream starts with the task again: it was already printed.
          if (!(attempt > 0 && e.kind === 'task')) onStep(e);
          if (e.kind === 'response') answer = e.text;
          if (e.kind === 'message') last = { taskId, contextId, state: 'completed', answer: e.text };
          if (e.kind === 'status' && (isTerminal(e.state) || e.state === 'input-required')) {
            last = { taskId, contextId, state: e.state, ...(e.text ? { statusText: e.text } : {}) };
          }
        }
        if (resp.payload?.$case === 'statusUpdate' && resp.payload.value.taskId) ({ taskId, contextId } = resp.payload.value);
      }
    } catch (e) {
      // A re-attach refused because the task ended in between: GetTask has its outcome.
      if (taskId && attempt > 0 && !connectionLost(e) && !signal?.aborted) return getTask(conn, taskId, signal);
      if (!taskId || !connectionLost(e) || attempt >= MAX_REATTACH || signal?.aborted) throw clientFailure(e, conn.name, 'sending the task', conn.detail?.());
    }
    if (last) return last.state === 'completed' && answer !== undefined ? { ...last, answer } : last;
    if (!taskId) throw clientFailure(new Error('the stream closed before the capsule named the task'), conn.name, 'sending the task');
    if (attempt >= MAX_REATTACH) return getTask(conn, taskId, signal);
    onStep({ kind: 'reattached', taskId });
    const current = await getTask(conn, taskId, signal);
    // Ended (or waiting for input) while no stream was open: its state is the outcome.
    if (isTerminal(current.state) || current.state === 'input-required') return current;
    stream = conn.client.resubscribeTask({ tenant: '', id: taskId }, conn.options(signal));
  }
}

export async function getTask(conn: AgentConnection, id: string, signal?: AbortSignal): Promise<TaskOutcome> {
  try {
    return outcomeOf(await conn.client.getTask({ tenant: '', id, historyLength: 0 }, conn.options(signal)));
  } catch (e) {
    throw clientFailure(e, conn.name, `reading task ${id}`, conn.detail?.());
  }
}

export async function cancelTask(conn: AgentConnection, id: string, signal?: AbortSignal): Promise<TaskOutcome> {
  try {
    return outcomeOf(await conn.client.cancelTask({ tenant: '', id, metadata: undefined }, conn.options(signal)));
  } catch (e) {
    throw clientFailure(e, conn.name, `canceling task ${id}`, conn.detail?.());
  }
}

export interface ListOptions {
  contextId?: string;
  state?: TaskState;
  pageSize?: number;
  pageToken?: string;
}

export async function listTasks(conn: AgentConnection, o: ListOptions = {}, signal?: AbortSignal): Promise<{ tasks: TaskOutcome[]; nextPageToken?: string }> {
  let r: ListTasksResponse;
  try {
    r = await conn.client.listTasks(
      {
        tenant: '',
        contextId: o.contextId ?? '',
        status: o.state ? toCoreState(o.state) : CoreTaskState.TASK_STATE_UNSPECIFIED,
        ...(o.pageSize !== undefined ? { pageSize: o.pageSize } : {}),
        pageToken: o.pageToken ?? '',
        historyLength: 0,
        statusTimestampAfter: undefined,
        includeArtifacts: true,
      },
      conn.options(signal),
    );
  } catch (e) {
    throw clientFailure(e, conn.name, 'listing tasks', conn.detail?.());
  }
  return { tasks: r.tasks.map(outcomeOf), ...(r.nextPageToken ? { nextPageToken: r.nextPageToken } : {}) };
}
