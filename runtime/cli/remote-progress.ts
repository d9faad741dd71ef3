/**
 * The steps of a capsule's task as `mur send` and `mur chat` print them, in the lines `mur run`
 * prints for a local task (progress.ts) where the stream says as much as the trace does. The
 * stream carries less than the trace: a turn's number but not its model or tokens, a tool call's
 * status but not a denial's hook and reason (docs/a2a.md, "What a stream carries").
 */
import type { StepEvent } from '../client/stream-events.ts';
import { stepLine } from './progress.ts';

export function remoteStepLine(e: StepEvent, label: string): string | undefined {
  switch (e.kind) {
    case 'task':
      return `▶ task ${e.taskId} (a2a, ${label})`;
    case 'turn':
      return `  turn ${e.turn}`;
    case 'tool':
      if (e.status === 'denied') return `    ⛔ ${e.tool} denied by a hook`;
      return stepLine({ event_type: 'tool_call', tool_name: e.tool, status: e.status, duration_ms: e.durationMs ?? '?' });
    case 'hook':
      return `    hook artifact: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}`;
    case 'lagged':
      return `  (stream lagged: ${e.dropped} step(s) not shown)`;
    case 'status':
      if (e.state === 'input-required') return `? ${e.text ?? '(the capsule asks for input)'}`;
      if (e.final) return `■ task ${e.state}${e.text && e.state !== 'completed' ? `: ${e.text}` : ''}`;
      return e.text ? `  ${e.state}: ${e.text}` : undefined;
    case 'reattached':
      return `  (the stream broke off; following task ${e.taskId} again)`;
    case 'artifact':
      return `    artifact ${e.name}: ${e.text ?? JSON.stringify(e.data)}`;
    default:
      // Chunks, thinking and the response: the answer is printed once, at the end.
      return undefined;
  }
}
