/**
 * A task's trace as the console shows it, from what the A2A task holds (GetTask): the user's
 * messages, then each artifact in the order the capsule emitted it — `step` artifacts (the
 * session's trace records of the task: turns with model and tokens, tool/shell/MCP calls, hook
 * calls and denials, the task's end), else `tool-call` artifacts, `hook-artifact`s, the answer —
 * and the final status. The trace.jsonl of the session
 * stays on the pod; what the task does not carry is not shown.
 */
import { Role, type Artifact, type Task } from '@a2a-js/sdk';
import { fromCoreState, messageText } from '../a2a/core/wire.ts';
import { partsText, type StepEvent } from '../client/stream-events.ts';

export type TimelineEntry =
  | { kind: 'user'; text: string }
  | { kind: 'agent'; text: string }
  | {
      kind: 'turn';
      turn?: number;
      model?: string;
      decision?: string;
      toolName?: string;
      inputTokens?: number;
      outputTokens?: number;
      durationMs?: number;
      origin?: string;
      error?: string;
    }
  | { kind: 'tool'; tool: string; status: string; durationMs?: number; via?: 'shell' | 'mcp'; detail?: string }
  | { kind: 'hook'; hook?: string; event?: string; outcome?: string; decision?: 'deny'; reason?: string; durationMs?: number; data?: unknown }
  | { kind: 'end'; exitStatus: string; turns?: number; inputTokens?: number; outputTokens?: number; durationMs?: number }
  | { kind: 'step'; data: Record<string, unknown> }
  | { kind: 'answer'; text: string }
  | { kind: 'status'; state: string; text?: string };

function dataOf(a: Artifact): Record<string, unknown> | undefined {
  const v = a.parts.find((p) => p.content?.$case === 'data')?.content?.value;
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Only the fields that are there (exactOptionalPropertyTypes: no `undefined` values). */
function defined<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** A shell record's command line: the program's name (not its resolved path) and its arguments. */
function shellCommand(r: Record<string, unknown>): string {
  const program = String(r.binary ?? '?')
    .split('/')
    .pop();
  return r.command !== undefined ? `${program} ${String(r.command)}` : String(program);
}

/**
 * One trace record of the task (a `step` artifact: `{event_type, …}`, the records of
 * docs/runtime.md "Trace events") as a timeline entry; undefined for `task_start`, which the
 * timeline's first line already is.
 */
export function recordEntry(r: Record<string, unknown>): TimelineEntry | undefined {
  switch (r.event_type) {
    case 'task_start':
      return undefined;
    case 'inference':
      return defined({
        kind: 'turn' as const,
        turn: num(r.turn),
        model: str(r.model),
        decision: str(r.decision),
        toolName: str(r.tool_name),
        inputTokens: num(r.input_tokens),
        outputTokens: num(r.output_tokens),
        durationMs: num(r.duration_ms),
        origin: str(r.origin),
        error: str(r.error),
      });
    case 'tool_call':
      return defined({ kind: 'tool' as const, tool: String(r.tool_name ?? '?'), status: String(r.status ?? '?'), durationMs: num(r.duration_ms) });
    case 'shell':
      return defined({
        kind: 'tool' as const,
        via: 'shell' as const,
        tool: shellCommand(r),
        status: r.exit_code === 0 ? 'ok' : 'error',
        detail: `exit ${String(r.exit_code)}`,
        durationMs: num(r.duration_ms),
      });
    case 'mcp_call':
      return defined({
        kind: 'tool' as const,
        via: 'mcp' as const,
        tool: `${String(r.server)}/${String(r.tool)}`,
        status: String(r.status ?? '?'),
        durationMs: num(r.duration_ms),
      });
    case 'call_denied':
      return defined({
        kind: 'hook' as const,
        decision: 'deny' as const,
        hook: str(r.hook_name) ?? str(r.hook),
        reason: str(r.reason),
        data: { call: r.tool_name ?? r.binary ?? r.command },
      });
    case 'hook_call':
      return defined({
        kind: 'hook' as const,
        hook: str(r.hook_name),
        event: str(r.event),
        outcome: str(r.outcome),
        durationMs: num(r.duration_ms),
      });
    case 'task_end':
      return defined({
        kind: 'end' as const,
        exitStatus: String(r.exit_status ?? '?'),
        turns: num(r.turns),
        inputTokens: num(r.input_tokens),
        outputTokens: num(r.output_tokens),
        durationMs: num(r.duration_ms),
      });
    default:
      return { kind: 'step', data: r };
  }
}

function artifactEntry(a: Artifact): TimelineEntry | undefined {
  const name = a.name || a.artifactId;
  const d = dataOf(a);
  if (name === 'tool-call') {
    const ms = num(d?.duration_ms);
    return { kind: 'tool', tool: String(d?.tool ?? '?'), status: String(d?.status ?? '?'), ...(ms !== undefined ? { durationMs: ms } : {}) };
  }
  if (name === 'hook-artifact') return { kind: 'hook', event: 'artifact', data: d ?? partsText(a.parts) };
  if (name === 'step') return recordEntry(d ?? {});
  if (name === 'thinking') return undefined;
  if (name === 'response') return { kind: 'answer', text: partsText(a.parts) };
  return { kind: 'step', data: { artifact: name, ...(d ?? { text: partsText(a.parts) }) } };
}

/**
 * The timeline of `t`. `streamed` is what this console saw on the task's stream (streamed.ts),
 * which says more than the task keeps (the trace records are streamed only); without it, the
 * task's own artifacts are the steps.
 */
export function timelineOf(t: Task, streamed?: TimelineEntry[]): { entries: TimelineEntry[]; source: 'stream' | 'task' } {
  const out: TimelineEntry[] = [];
  for (const m of t.history ?? []) {
    const text = messageText(m);
    if (text === '') continue;
    out.push(m.role === Role.ROLE_USER ? { kind: 'user', text } : { kind: 'agent', text });
  }
  // A capsule that streams its trace records (`step` artifacts) also sends a `tool-call` artifact
  // per call, for older clients: with the records there, those would show each call twice.
  const hasSteps = t.artifacts.some((a) => (a.name || a.artifactId) === 'step');
  const artifacts = hasSteps ? t.artifacts.filter((a) => (a.name || a.artifactId) !== 'tool-call') : t.artifacts;
  const entries = artifacts.map(artifactEntry).filter((e): e is TimelineEntry => e !== undefined);
  // The response artifact is kept at its first chunk's place; the answer reads best last.
  out.push(...(streamed ?? entries.filter((e) => e.kind !== 'answer')), ...entries.filter((e) => e.kind === 'answer'));
  const state = fromCoreState(t.status?.state) ?? 'unknown';
  const text = messageText(t.status?.message);
  out.push({ kind: 'status', state, ...(text ? { text } : {}) });
  return { entries: out, source: streamed ? 'stream' : 'task' };
}

/** A stream event that is not a trace record, as the timeline shows it (when the stream has no records). */
function streamEntry(e: StepEvent): TimelineEntry | undefined {
  if (e.kind === 'turn') return { kind: 'turn', turn: e.turn };
  if (e.kind === 'tool') return { kind: 'tool', tool: e.tool, status: e.status, ...(e.durationMs !== undefined ? { durationMs: e.durationMs } : {}) };
  if (e.kind === 'hook') return { kind: 'hook', event: 'artifact', data: e.data };
  return undefined;
}

export interface LiveStep {
  /** What the chat shows: a timeline entry, or the stream event as it is. */
  send?: { name: 'step'; data: StepEvent } | { name: 'entry'; data: TimelineEntry };
  /** What the task's timeline keeps of it. */
  keep?: TimelineEntry;
}

/**
 * The chat's view of a live stream: each trace record (`step` event) as a timeline entry, the
 * stream's other events as they are. Once the first record (`task_start`) says the stream carries
 * the records, the per-turn status and `tool-call` events, which say the same thing with less,
 * are dropped.
 */
export function liveSteps(): (e: StepEvent) => LiveStep {
  let records = false;
  return (e) => {
    // `kind: 'step'` is read structurally: a client from before step records never sends it.
    const record = (e as { kind: string; record?: unknown }).kind === 'step' ? (e as { record?: unknown }).record : undefined;
    if (record && typeof record === 'object') {
      const r = record as Record<string, unknown>;
      if (r.event_type === 'task_start') records = true;
      const entry = recordEntry(r);
      return entry ? { send: { name: 'entry', data: entry }, keep: entry } : {};
    }
    if (records && (e.kind === 'turn' || e.kind === 'tool')) return {};
    const keep = records ? undefined : streamEntry(e);
    return { send: { name: 'step', data: e }, ...(keep ? { keep } : {}) };
  };
}
