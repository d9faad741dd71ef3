/**
 * A task's trace as the console shows it, from what the A2A task holds (GetTask): the user's
 * messages, then each artifact in the order the capsule emitted it — `step` artifacts (turns with
 * tokens, tool/shell/MCP calls, hook decisions, when the capsule streams them), `tool-call` and
 * `hook-artifact` artifacts, the answer — and the final status. The trace.jsonl of the session
 * stays on the pod; what the task does not carry is not shown.
 */
import { Role, type Artifact, type Task } from '@a2a-js/sdk';
import { fromCoreState, messageText } from '../a2a/core/wire.ts';
import { partsText } from '../client/stream-events.ts';

export type TimelineEntry =
  | { kind: 'user'; text: string }
  | { kind: 'agent'; text: string }
  | { kind: 'turn'; turn?: number; inputTokens?: number; outputTokens?: number; data: Record<string, unknown> }
  | { kind: 'tool'; tool: string; status: string; durationMs?: number; via?: string }
  | { kind: 'hook'; data: unknown }
  | { kind: 'step'; data: Record<string, unknown> }
  | { kind: 'answer'; text: string }
  | { kind: 'status'; state: string; text?: string };

function dataOf(a: Artifact): Record<string, unknown> | undefined {
  const v = a.parts.find((p) => p.content?.$case === 'data')?.content?.value;
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** A `step` artifact's data: its `kind` says what it was (turn, tool, shell, mcp, hook, …). */
function stepEntry(d: Record<string, unknown>): TimelineEntry {
  const kind = String(d['kind'] ?? d['type'] ?? '');
  if (kind === 'turn') {
    const tokens = (d['tokens'] ?? {}) as Record<string, unknown>;
    const input = num(d['input_tokens']) ?? num(tokens['input']);
    const output = num(d['output_tokens']) ?? num(tokens['output']);
    return { kind: 'turn', ...(num(d['turn']) !== undefined ? { turn: num(d['turn'])! } : {}), ...(input !== undefined ? { inputTokens: input } : {}), ...(output !== undefined ? { outputTokens: output } : {}), data: d };
  }
  if (kind === 'tool' || kind === 'shell' || kind === 'mcp') {
    const ms = num(d['duration_ms']);
    return { kind: 'tool', tool: String(d['tool'] ?? d['name'] ?? d['command'] ?? '?'), status: String(d['status'] ?? '?'), ...(ms !== undefined ? { durationMs: ms } : {}), via: kind };
  }
  if (kind === 'hook') return { kind: 'hook', data: d };
  return { kind: 'step', data: d };
}

function artifactEntry(a: Artifact): TimelineEntry | undefined {
  const name = a.name || a.artifactId;
  const d = dataOf(a);
  if (name === 'tool-call') {
    const ms = num(d?.['duration_ms']);
    return { kind: 'tool', tool: String(d?.['tool'] ?? '?'), status: String(d?.['status'] ?? '?'), ...(ms !== undefined ? { durationMs: ms } : {}) };
  }
  if (name === 'hook-artifact') return { kind: 'hook', data: d ?? partsText(a.parts) };
  if (name === 'step') return stepEntry(d ?? {});
  if (name === 'thinking') return undefined;
  if (name === 'response') return { kind: 'answer', text: partsText(a.parts) };
  return { kind: 'step', data: { artifact: name, ...(d ?? { text: partsText(a.parts) }) } };
}

export function timelineOf(t: Task): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const m of t.history ?? []) {
    const text = messageText(m);
    if (text === '') continue;
    out.push(m.role === Role.ROLE_USER ? { kind: 'user', text } : { kind: 'agent', text });
  }
  // The response artifact is kept at its first chunk's place; the answer reads best last.
  const entries = t.artifacts.map(artifactEntry).filter((e): e is TimelineEntry => e !== undefined);
  out.push(...entries.filter((e) => e.kind !== 'answer'), ...entries.filter((e) => e.kind === 'answer'));
  const state = fromCoreState(t.status?.state) ?? 'unknown';
  const text = messageText(t.status?.message);
  out.push({ kind: 'status', state, ...(text ? { text } : {}) });
  return out;
}
