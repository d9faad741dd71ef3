/**
 * Where a served task's time goes, phase by phase, read from the runtime's own trace: both runtimes
 * write `task_start`, `inference` (a driver turn answered), `tool_call` (a tool answered) and
 * `task_end` with a millisecond timestamp, so the gaps between them split a task into the same
 * phases on either side — to the first turn's answer, to the tool's, to the next turn's, to the
 * task's end, and from that end to the next task's start (tasks run one at a time) — without any
 * client in the measure. The reference writes more event types (`a2a_task_received`,
 * `session_start`, `session_end`); they are left out, so the phases are the same.
 *
 * Why means of whole-millisecond stamps are good enough: over a window of 100 tasks the rounding
 * of each stamp averages out (a phase's mean is off by well under 0.1 ms), and a phase that is
 * always under a millisecond still reads as its mean.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readTrace } from '../runtime/trace/read.ts';

/** The events a phase runs between. */
const KINDS = new Set(['task_start', 'inference', 'tool_call', 'task_end']);

/** One task's events in order: its kinds and their timestamps (ms). */
export interface TaskEvents {
  kinds: string[];
  stamps: number[];
}

/**
 * The tasks of a trace's events, in order: each from its `task_start` to its `task_end` with the
 * turns and tool calls between. Events of other kinds, events without a numeric timestamp and
 * events outside a task are skipped; a task without its end (the trace cut) is left out.
 */
export function tasksOf(events: Iterable<{ event_type: string; timestamp?: unknown }>): TaskEvents[] {
  const tasks: TaskEvents[] = [];
  let cur: TaskEvents | undefined;
  for (const e of events) {
    if (!KINDS.has(e.event_type) || typeof e.timestamp !== 'number') continue;
    if (e.event_type === 'task_start') cur = { kinds: [], stamps: [] };
    if (!cur) continue;
    cur.kinds.push(e.event_type);
    cur.stamps.push(e.timestamp);
    if (e.event_type === 'task_end') {
      tasks.push(cur);
      cur = undefined;
    }
  }
  return tasks;
}

/**
 * The tasks of every trace.jsonl under `dir` (a serving process's --workdir), by their start; read
 * with the runtime's own trace reader, which leaves out lines that are not JSON events.
 */
export function traceTasks(dir: string): TaskEvents[] {
  const all: TaskEvents[] = [];
  for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (f.endsWith('trace.jsonl')) all.push(...tasksOf(readTrace(join(dir, f)).events));
  }
  return all.sort((a, b) => a.stamps[0]! - b.stamps[0]!);
}

/**
 * Mean duration (ms) of each phase over `tasks`, keyed `<from> → <to>` (the second turn's answer
 * is `tool_call → inference`), in the order the tasks run them; the gap from each task's end to the
 * next one's start is `task_end → task_start`, over the tasks that have a next one in `next`
 * (`tasks` followed by the task after them, if any). Tasks of another shape than the first (a
 * window's first task after a start keeps the tool turn with `--one-turn`) are left out of the
 * phases inside a task.
 */
export function phaseMeans(tasks: readonly TaskEvents[], next?: TaskEvents): Map<string, number> {
  const out = new Map<string, number>();
  const first = tasks[0];
  if (!first) return out;
  const shape = first.kinds.join(' ');
  const same = tasks.filter((t) => t.kinds.join(' ') === shape);
  for (let i = 1; i < first.kinds.length; i++) {
    const sum = same.reduce((s, t) => s + t.stamps[i]! - t.stamps[i - 1]!, 0);
    let label = `${first.kinds[i - 1]} → ${first.kinds[i]}`;
    while (out.has(label)) label += "'";
    out.set(label, sum / same.length);
  }
  const seq = next ? [...tasks, next] : tasks;
  if (seq.length > 1) out.set('task_end → task_start', endToStart(seq) / (seq.length - 1));
  return out;
}

/** The summed gaps from each task's end to the next one's start over `seq` (ms; `seq.length − 1` gaps). */
export function endToStart(seq: readonly TaskEvents[]): number {
  let gaps = 0;
  for (let i = 1; i < seq.length; i++) gaps += seq[i]!.stamps[0]! - seq[i - 1]!.stamps.at(-1)!;
  return gaps;
}
