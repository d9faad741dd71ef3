/**
 * What a task's executor reports, with every secret the runtime holds redacted (runtime/secrets.ts)
 * before it becomes a status message, an artifact or the task's outcome: the one place an A2A
 * caller's view of a task is made from the executor's text. A provider's error body quoting the
 * key (`invalid x-api-key: sk-…`) fails the task with `invalid x-api-key: [redacted]`.
 * Streamed response chunks are redacted chunk by chunk; the final response artifact, made from
 * the outcome's whole text, is redacted whole.
 */
import { redact, redactDeep } from '../../secrets.ts';
import type { TaskEvents, TaskOutcome } from '../core/executor.ts';

export function redactedEvents(ev: TaskEvents): TaskEvents {
  return {
    status: (message) => ev.status(message === undefined ? undefined : redact(message)),
    artifact: (a) => ev.artifact(redactDeep(a)),
    textChunk: (s) => ev.textChunk(redact(s)),
    thinkingChunk: (s) => ev.thinkingChunk(redact(s)),
    step: (r) => ev.step(redactDeep(r)),
    requestInput: (prompt, resume) => ev.requestInput(redact(prompt), resume),
  };
}

export function redactedOutcome(o: TaskOutcome): TaskOutcome {
  return redactDeep(o);
}
