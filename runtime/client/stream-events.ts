/**
 * What a capsule's A2A stream says, as steps a terminal or a script can use. `mur serve` streams
 * (docs/a2a.md, "What a stream carries"): a `working` status "inference turn N" as each turn is
 * admitted, a `tool-call` artifact per tool or shell call ({tool, status ok|error|denied,
 * duration_ms}), `hook-artifact`s, `step` artifacts (the session's trace records of the task),
 * response and thinking chunks, the full `response` artifact, and exactly one final status (or an
 * `input-required` one that ends the stream).
 */
import type { Artifact, Message, StreamResponse, Task } from '@a2a-js/sdk';
import type { TaskState } from '../a2a/core/executor.ts';
import { fromCoreState, messageText } from '../a2a/core/wire.ts';

export type StepEvent =
  | { kind: 'task'; taskId: string; contextId: string; state: TaskState }
  | { kind: 'turn'; turn: number }
  | { kind: 'status'; state: TaskState; text?: string; final: boolean }
  | { kind: 'lagged'; dropped: number }
  | { kind: 'tool'; tool: string; status: string; durationMs?: number }
  | { kind: 'hook'; data: unknown }
  /** A `step` artifact: one trace record of the task (`{event_type, ...}`), as `mur run` reads it. */
  | { kind: 'step'; record: Record<string, unknown> }
  | { kind: 'chunk'; text: string }
  | { kind: 'thinking'; text: string }
  | { kind: 'response'; text: string }
  | { kind: 'artifact'; name: string; text?: string; data?: unknown }
  | { kind: 'message'; text: string }
  /** Not on the wire: the stream broke off and the client re-attached to the task. */
  | { kind: 'reattached'; taskId: string };

const TURN = /^inference turn (\d+)$/;

export function partsText(parts: Artifact['parts']): string {
  return parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

function partsData(parts: Artifact['parts']): unknown {
  return parts.find((p) => p.content?.$case === 'data')?.content?.value;
}

export function taskState(t: Task): TaskState {
  return fromCoreState(t.status?.state) ?? 'failed';
}

/** The answer of a task: its `response` artifact, else its text artifacts, else its status message. */
export function answerOf(t: Task): string | undefined {
  const resp = t.artifacts.find((a) => a.name === 'response' || a.artifactId === 'response');
  if (resp) return partsText(resp.parts);
  const texts = t.artifacts
    .filter((a) => a.name !== 'tool-call' && a.name !== 'hook-artifact')
    .map((a) => partsText(a.parts))
    .filter((s) => s !== '');
  if (texts.length) return texts.join('\n');
  const status = statusText(t.status?.message);
  return status === '' ? undefined : status;
}

export function statusText(m: Message | undefined): string {
  return messageText(m);
}

export function stepsOf(resp: StreamResponse): StepEvent[] {
  const p = resp.payload;
  if (!p) return [];
  switch (p.$case) {
    case 'task':
      return [{ kind: 'task', taskId: p.value.id, contextId: p.value.contextId, state: taskState(p.value) }];
    case 'message':
      return [{ kind: 'message', text: messageText(p.value) }];
    case 'statusUpdate': {
      const state = fromCoreState(p.value.status?.state) ?? 'failed';
      const text = messageText(p.value.status?.message);
      const lagged = (p.value.metadata?.murmur as { lagged?: number } | undefined)?.lagged;
      if (typeof lagged === 'number') return [{ kind: 'lagged', dropped: lagged }];
      const turn = state === 'working' ? TURN.exec(text) : null;
      if (turn) return [{ kind: 'turn', turn: Number(turn[1]) }];
      const final = state !== 'working' && state !== 'submitted';
      return [{ kind: 'status', state, ...(text ? { text } : {}), final }];
    }
    case 'artifactUpdate': {
      const a = p.value.artifact;
      if (!a) return [];
      const name = a.name || a.artifactId;
      if (name === 'tool-call') {
        const d = (partsData(a.parts) ?? {}) as { tool?: string; status?: string; duration_ms?: number };
        return [
          {
            kind: 'tool',
            tool: String(d.tool ?? '?'),
            status: String(d.status ?? '?'),
            ...(typeof d.duration_ms === 'number' ? { durationMs: d.duration_ms } : {}),
          },
        ];
      }
      if (name === 'step') {
        const record = partsData(a.parts);
        if (record !== null && typeof record === 'object' && !Array.isArray(record)) return [{ kind: 'step', record: record as Record<string, unknown> }];
      }
      if (name === 'hook-artifact') return [{ kind: 'hook', data: partsData(a.parts) ?? partsText(a.parts) }];
      if (name === 'thinking') return [{ kind: 'thinking', text: partsText(a.parts) }];
      if (name === 'response') {
        // The closing response artifact replaces the chunks (append false, lastChunk true).
        if (p.value.lastChunk && !p.value.append) return [{ kind: 'response', text: partsText(a.parts) }];
        return [{ kind: 'chunk', text: partsText(a.parts) }];
      }
      const data = partsData(a.parts);
      const text = partsText(a.parts);
      return [{ kind: 'artifact', name, ...(text ? { text } : {}), ...(data !== undefined ? { data } : {}) }];
    }
    default:
      return [];
  }
}
