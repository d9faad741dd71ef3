/** One line per step of a session, read off the trace as it is written. */
import type { TraceWriter } from '../trace/writer.ts';

export function printProgress(trace: TraceWriter, out: (s: string) => void): () => void {
  return trace.onEvent((e) => {
    switch (e.event_type) {
      case 'task_start':
        out(`▶ task ${e.task_id} (${e.source})`);
        break;
      case 'inference': {
        const origin = e.origin ? ` [${String(e.origin)}]` : '';
        const what = e.decision === 'tool_call' ? `→ tool ${String(e.tool_name)}` : `→ ${String(e.decision)}`;
        out(`  turn ${e.turn ?? '-'}${origin}: ${String(e.model)} ${what}  (${e.input_tokens} in / ${e.output_tokens} out, ${e.duration_ms} ms)${e.error ? `  error: ${String(e.error)}` : ''}`);
        break;
      }
      case 'tool_call':
        out(`    ${String(e.tool_name)} ${e.status === 'ok' ? '✓' : '✗'} ${e.duration_ms} ms`);
        break;
      case 'shell':
        out(`    $ ${String(e.command ?? e.binary)} → exit ${e.exit_code} (${e.duration_ms} ms)${e.truncated ? ', output truncated' : ''}`);
        break;
      case 'call_denied':
        out(`    ⛔ ${String(e.tool_name ?? e.binary ?? 'call')} denied by ${String(e.hook_name ?? e.hook)}: ${String(e.reason)}`);
        break;
      case 'network_denied':
        out(`    ⛔ ${String(e.component_kind)} ${String(e.component)}: outgoing request to ${String(e.destination)} refused (not in its network grant)`);
        break;
      case 'compaction':
        out(`  compaction: ${e.tokens_before} → ${e.tokens_after} tokens`);
        break;
      case 'task_reopened':
        out(`  ↻ reopened by ${String(e.hook_name)}: ${String(e.reason)}`);
        break;
      case 'spend_ceiling_reached':
        out(`  spend ceiling reached (limit ${e.limit})`);
        break;
      case 'task_end':
        out(`■ task ${e.exit_status} after ${e.turns} turn(s), ${e.input_tokens} in / ${e.output_tokens} out tokens, ${e.duration_ms} ms`);
        break;
    }
  });
}
