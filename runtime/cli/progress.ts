/** One line per step of a session, read off the trace as it is written. */
import type { TraceWriter } from '../trace/writer.ts';

export function printProgress(trace: TraceWriter, out: (s: string) => void): () => void {
  return trace.onEvent((e) => {
    const line = stepLine(e);
    if (line !== undefined) out(line);
  });
}

/**
 * The line of one trace event, or undefined for events that get none. `mur send` prints the
 * steps it sees on a capsule's A2A stream with the same lines (remote-progress.ts).
 */
export function stepLine(e: Record<string, unknown>): string | undefined {
  switch (e.event_type) {
    case 'task_start':
      return `▶ task ${e.task_id} (${e.source})`;
    case 'task_resumed':
      return `▶ task ${e.task_id} resumed at ${String(e.tool_name)} (turn ${e.turn}), with the reply it waited for`;
    case 'inference': {
      const origin = e.origin ? ` [${String(e.origin)}]` : '';
      const what = e.decision === 'tool_call' ? `→ tool ${String(e.tool_name)}` : `→ ${String(e.decision)}`;
      return `  turn ${e.turn ?? '-'}${origin}: ${String(e.model)} ${what}  (${e.input_tokens} in / ${e.output_tokens} out, ${e.duration_ms} ms)${e.error ? `  error: ${String(e.error)}` : ''}`;
    }
    case 'tool_call':
      return `    ${String(e.tool_name)} ${e.status === 'ok' ? '✓' : '✗'} ${e.duration_ms} ms`;
    case 'shell':
      return `    $ ${String(e.command ?? e.binary)} → exit ${e.exit_code} (${e.duration_ms} ms)${e.truncated ? ', output truncated' : ''}`;
    case 'call_denied':
      return `    ⛔ ${String(e.tool_name ?? e.binary ?? 'call')} denied by ${String(e.hook_name ?? e.hook)}: ${String(e.reason)}`;
    case 'network_denied':
      return `    ⛔ ${String(e.component_kind)} ${String(e.component)}: outgoing request to ${String(e.destination)} refused (not in its network grant)`;
    case 'compaction':
      return `  compaction: ${e.tokens_before} → ${e.tokens_after} tokens`;
    case 'task_reopened':
      return `  ↻ reopened by ${String(e.hook_name)}: ${String(e.reason)}`;
    case 'spend_ceiling_reached':
      return `  spend ceiling reached (limit ${e.limit})`;
    case 'task_end':
      return `■ task ${e.exit_status} after ${e.turns} turn(s), ${e.input_tokens} in / ${e.output_tokens} out tokens, ${e.duration_ms} ms`;
  }
  return undefined;
}
