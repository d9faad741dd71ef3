/**
 * Reading and checking what an A2A request carries, before the task machine sees it: the message
 * (required fields, media types against the card's input modes, some text), ListTasks parameters
 * and history lengths, refused with the SDK's RequestMalformedError (-32602 / HTTP 400 /
 * INVALID_ARGUMENT) or ContentTypeNotSupportedError rather than clamped.
 */
import type { ListTasksRequest, Message, Task } from '@a2a-js/sdk';
import { Role, TaskState, type Part } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { messageText } from '../core/wire.ts';

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

export function validateMessage(m: Message | undefined, inputModes: readonly string[]): Message {
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

export function checkHistoryLength(n: number | undefined, where: string): void {
  if (n !== undefined && (!Number.isInteger(n) || n < 0)) {
    throw invalidParams(`${where} must be a non-negative integer (0 = no history), got ${String(n)}`);
  }
}

/** ListTasks parameters, refused rather than clamped (A2A 1.0 §3.1.4: -32602 for invalid ones). */
export function checkListParams(p: ListTasksRequest): void {
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

export function requireId(id: string | undefined): string {
  if (!id) throw invalidParams('params.id (the task id) is required');
  return id;
}

/** A task with its history cut to the last `historyLength` messages (0 or less: none). */
export function applyHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength !== undefined) task.history = historyLength <= 0 ? [] : (task.history ?? []).slice(-historyLength);
  return task;
}
