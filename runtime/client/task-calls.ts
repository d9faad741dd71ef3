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

/**
 * Sends `message` and follows the task to its end or to `input-required`, telling `onStep` each
 * step. A stream that closes early (a dropped connection, a proxy) is not the task's end: the
 * task is then read back with GetTask. A card without streaming gets a blocking send.
 */
export async function sendAndFollow(conn: AgentConnection, message: Message, onStep: (e: StepEvent) => void, signal?: AbortSignal): Promise<TaskOutcome> {
  const params = { tenant: '', message, configuration: undefined, metadata: undefined };
  let taskId = message.taskId;
  let contextId = message.contextId;
  let last: TaskOutcome | undefined;
  let answer: string | undefined;
  try {
    if (!conn.card.capabilities?.streaming) {
      const r = await conn.client.sendMessage(params, conn.options(signal));
      if ('messageId' in r) return { taskId: r.taskId, contextId: r.contextId, state: 'completed', answer: statusText(r as Message) };
      return outcomeOf(r as Task);
    }
    for await (const resp of conn.client.sendMessageStream(params, conn.options(signal))) {
      for (const e of stepsOf(resp)) {
        onStep(e);
        if (e.kind === 'task') ({ taskId, contextId } = e);
        if (e.kind === 'response') answer = e.text;
        if (e.kind === 'message') last = { taskId, contextId, state: 'completed', answer: e.text };
        if (e.kind === 'status' && (isTerminal(e.state) || e.state === 'input-required')) {
          last = { taskId, contextId, state: e.state, ...(e.text ? { statusText: e.text } : {}) };
        }
      }
      if (resp.payload?.$case === 'statusUpdate' && resp.payload.value.taskId) ({ taskId, contextId } = resp.payload.value);
    }
  } catch (e) {
    throw clientFailure(e, conn.name, 'sending the task', conn.detail?.());
  }
  if (last) return last.state === 'completed' && answer !== undefined ? { ...last, answer } : last;
  if (!taskId) throw clientFailure(new Error('the stream closed before the capsule named the task'), conn.name, 'sending the task');
  return getTask(conn, taskId, signal);
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
