/**
 * Small helpers shared by the A2A server and client: SDK core-type builders, state mapping,
 * origin/trust header parsing and the JSON-RPC method tables for both protocol versions.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState as CoreTaskState } from '@a2a-js/sdk';
import type { Artifact, Message, Part } from '@a2a-js/sdk';
import type { TaskOrigin, TaskState, TaskTrust } from './executor.ts';

export const ORIGIN_HEADER = 'x-murmur-task-origin';
export const TRUST_HEADER = 'x-murmur-task-trust';
export const TRACEPARENT_HEADER = 'traceparent';
export const VERSION_HEADER = 'A2A-Version';

const TO_CORE: Record<TaskState, CoreTaskState> = {
  submitted: CoreTaskState.TASK_STATE_SUBMITTED,
  working: CoreTaskState.TASK_STATE_WORKING,
  'input-required': CoreTaskState.TASK_STATE_INPUT_REQUIRED,
  completed: CoreTaskState.TASK_STATE_COMPLETED,
  failed: CoreTaskState.TASK_STATE_FAILED,
  rejected: CoreTaskState.TASK_STATE_REJECTED,
  canceled: CoreTaskState.TASK_STATE_CANCELED,
};

export function toCoreState(s: TaskState): CoreTaskState {
  return TO_CORE[s];
}

/** Core (SDK enum) state → our string state; `auth-required`/unknown map to undefined. */
export function fromCoreState(s: CoreTaskState | undefined): TaskState | undefined {
  for (const [k, v] of Object.entries(TO_CORE)) if (v === s) return k as TaskState;
  return undefined;
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

export function dataPart(data: unknown): Part {
  return { content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

export function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function artifact(artifactId: string, parts: Part[], opts: { name?: string; description?: string; metadata?: Record<string, unknown> } = {}): Artifact {
  return {
    artifactId,
    name: opts.name ?? '',
    description: opts.description ?? '',
    parts,
    metadata: opts.metadata,
    extensions: [],
  };
}

/** Text of a message: its text parts joined with "\n"; without text parts, its data parts as JSON. */
export function messageText(m: Message | undefined): string {
  if (!m) return '';
  const texts: string[] = [];
  const data: string[] = [];
  for (const p of m.parts) {
    if (p.content?.$case === 'text') texts.push(p.content.value);
    else if (p.content?.$case === 'data') data.push(JSON.stringify(p.content.value));
  }
  return texts.length > 0 ? texts.join('\n') : data.join('\n');
}

function header(h: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Origin and trust of an incoming task, from its request headers (murmur origin.rs semantics):
 * - no `x-murmur-task-origin` → `user`;
 * - `peer` / `completion` (case-insensitive) → kept;
 * - any other value (including `user`, `system`, `schedule`, garbage) → `event`, and trust is
 *   forced to `untrusted`: the wire cannot claim a privileged origin;
 * - trust is `trusted` only for the exact value `trusted`; absent or anything else → `untrusted`.
 */
export function parseOriginTrust(h: Record<string, string | string[] | undefined>): {
  origin: TaskOrigin;
  trust: TaskTrust;
} {
  const rawOrigin = header(h, ORIGIN_HEADER);
  const rawTrust = header(h, TRUST_HEADER)?.trim().toLowerCase();
  let trust: TaskTrust = rawTrust === 'trusted' ? 'trusted' : 'untrusted';
  let origin: TaskOrigin;
  if (rawOrigin === undefined) origin = 'user';
  else {
    const o = rawOrigin.trim().toLowerCase();
    if (o === 'peer' || o === 'completion') origin = o;
    else {
      origin = 'event';
      trust = 'untrusted';
    }
  }
  return { origin, trust };
}

/** The caller's traceparent, by the runtime's one W3C parser (runtime/telemetry/traceparent.ts). */
export { validTraceparent } from '../../telemetry/traceparent.ts';

/**
 * The JSON-RPC methods whose answer is a stream (SSE) of a task's events, in both versions: only
 * their responses are tracked for the stream subscriber (server/response-of.ts).
 */
export const STREAMING_METHODS: ReadonlySet<string> = new Set(['message/stream', 'tasks/resubscribe', 'SendStreamingMessage', 'SubscribeToTask']);

/** JSON-RPC method names per protocol version (the SDK implements the rest of each table). */
export const METHODS_0_3 = new Set([
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
]);

export const METHODS_1_0 = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
]);

/**
 * Normalise an `A2A-Version` header to `0.3` or `1.0` (absent = `0.3`, patch ignored: "1", "1.0",
 * "1.0.1" → "1.0"); undefined when unsupported.
 */
export function normaliseVersion(v: string | undefined): '0.3' | '1.0' | undefined {
  if (v === undefined || v.trim() === '') return '0.3';
  const m = /^\s*(\d+)(?:\.(\d+))?(?:\.\d+)?\s*$/.exec(v);
  if (!m) return undefined;
  const major = Number(m[1]);
  const minor = Number(m[2] ?? '0');
  if (major === 0 && minor === 3) return '0.3';
  if (major === 1 && minor === 0) return '1.0';
  return undefined;
}
