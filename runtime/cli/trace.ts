/** `mur trace show|steps|report <trace.jsonl | session workdir>`: read a session's trace. */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readTrace, type TraceLine } from '../trace/read.ts';
import { findRedundantCalls, type ToolCallRecord } from '../tools/redundancy.ts';
import { helpText, parseArgs, type FlagSpec } from './args.ts';
import { MurError } from '../errors.ts';

const FLAGS: FlagSpec = {
  json: { type: 'boolean', help: 'print JSON instead of text' },
  help: { type: 'boolean', help: 'show this help' },
};

export const TRACE_HELP = helpText(
  'mur trace <show|steps|report> <trace.jsonl | session-workdir> [--json]',
  "show    every event, one line each\nsteps   the agent loop turn by turn: inference decisions and the calls they made\nreport  totals per task and session, and the redundant-call detector: repeated reads of the\n        same resource (by the tool's resource_id / state_effect, else path-like input fields)",
  FLAGS,
);

function tracePath(p: string): string {
  const abs = resolve(p);
  if (!existsSync(abs)) throw new MurError('E-CLI-010', `no such trace: ${abs}`, { hint: 'pass a trace.jsonl file or a session workdir' });
  return statSync(abs).isDirectory() ? join(abs, 'trace.jsonl') : abs;
}

function line(e: TraceLine): string {
  const { event_type, session_id: _s, timestamp, seq: _q, ...rest } = e;
  const t = new Date(timestamp).toISOString().slice(11, 23);
  return `${t} ${event_type.padEnd(20)} ${JSON.stringify(rest)}`;
}

export function steps(events: TraceLine[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.event_type === 'task_start') out.push(`task ${String(e.task_id)}`);
    else if (e.event_type === 'inference')
      out.push(
        `  turn ${String(e.turn ?? '-')}${e.origin ? ` (${String(e.origin)})` : ''}: ${String(e.decision)}${e.tool_name ? ` ${String(e.tool_name)}` : ''} — ${String(e.input_tokens)} in / ${String(e.output_tokens)} out`,
      );
    else if (e.event_type === 'tool_call')
      out.push(`    → ${String(e.tool_name)} ${String(e.status)} (${String(e.duration_ms)} ms)${e.resource_id ? ` resource ${String(e.resource_id)}` : ''}`);
    else if (e.event_type === 'shell') out.push(`    → $ ${String(e.command)} exit ${String(e.exit_code)}`);
    else if (e.event_type === 'call_denied') out.push(`    ⛔ denied by ${String(e.hook_name ?? e.hook)}: ${String(e.reason)}`);
    else if (e.event_type === 'network_denied')
      out.push(`    ⛔ ${String(e.component_kind)} ${String(e.component)}: request to ${String(e.destination)} refused by the network grant`);
    else if (e.event_type === 'compaction') out.push(`  compaction ${String(e.tokens_before)} → ${String(e.tokens_after)}`);
    else if (e.event_type === 'task_end') out.push(`  end: ${String(e.exit_status)}`);
  }
  return out;
}

export function report(events: TraceLine[]): Record<string, unknown> {
  // tool_call trace events are already in the detector's record shape. A shell command declares no
  // effect and no resource, so it may have changed anything (`sed -i`, `git checkout`): it goes in
  // as an unknown call, which ends every clean-read streak.
  const calls = events
    .filter((e) => e.event_type === 'tool_call' || e.event_type === 'shell')
    .map((e) =>
      e.event_type === 'shell'
        ? { turn: e.turn as number | undefined, tool_name: `shell:${String(e.binary ?? 'unknown')}`, status: e.exit_code === 0 ? 'ok' : 'error' }
        : e,
    ) as unknown as ToolCallRecord[];
  const end = events.filter((e) => e.event_type === 'session_end').at(-1);
  const tasks = events
    .filter((e) => e.event_type === 'task_end')
    .map((e) => ({ task_id: e.task_id, exit_status: e.exit_status, turns: e.turns, input_tokens: e.input_tokens, output_tokens: e.output_tokens }));
  return {
    session_id: events[0]?.session_id,
    tasks,
    totals: end
      ? {
          turns: end.total_turns,
          input_tokens: end.total_input_tokens,
          output_tokens: end.total_output_tokens,
          tool_calls: end.total_tool_calls,
          shell_calls: end.total_shell_calls,
          exit_status: end.exit_status,
        }
      : undefined,
    denied: events.filter((e) => e.event_type === 'call_denied').length,
    network_denied: events.filter((e) => e.event_type === 'network_denied').length,
    hook_faults: events.filter((e) => e.event_type === 'hook_dispatch_error').length,
    redundant: findRedundantCalls(calls),
  };
}

export async function traceCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { flags, positionals } = parseArgs(argv, FLAGS);
  const [sub, target] = positionals;
  if (flags.help || !sub) {
    out(TRACE_HELP);
    return flags.help ? 0 : 2;
  }
  if (!target) throw new MurError('E-CLI-011', `mur trace ${sub} needs a trace file or session workdir`);
  const { events, bad } = readTrace(tracePath(target));
  for (const b of bad) out(`warning: line ${b.line} is not a trace event, skipped`);
  if (sub === 'show') {
    if (flags.json) out(JSON.stringify(events, null, 2));
    else for (const e of events) out(line(e));
  } else if (sub === 'steps') {
    for (const l of steps(events)) out(l);
  } else if (sub === 'report') {
    const r = report(events);
    if (flags.json) out(JSON.stringify(r, null, 2));
    else out(reportText(r));
  } else {
    throw new MurError('E-CLI-012', `unknown trace command '${sub}'`, { hint: 'use show, steps or report' });
  }
  return 0;
}

function reportText(r: Record<string, unknown>): string {
  const lines = [`session ${String(r.session_id)}`];
  for (const t of r.tasks as Record<string, unknown>[])
    lines.push(
      `  task ${String(t.task_id)}: ${String(t.exit_status)}, ${String(t.turns)} turns, ${String(t.input_tokens)} in / ${String(t.output_tokens)} out`,
    );
  const tot = r.totals as Record<string, unknown> | undefined;
  if (tot)
    lines.push(
      `totals: ${String(tot.turns)} turns, ${String(tot.tool_calls)} tool calls, ${String(tot.shell_calls)} shell calls, exit ${String(tot.exit_status)}`,
    );
  lines.push(`denied calls: ${String(r.denied)}, hook faults: ${String(r.hook_faults)}`);
  const red = r.redundant as { calls: number; redundant: { index: number; tool_name?: string; resource?: { key?: string } }[] };
  lines.push(`redundant reads: ${red.redundant.length} of ${red.calls} calls`);
  for (const x of red.redundant) lines.push(`  ${JSON.stringify(x)}`);
  return lines.join('\n');
}
