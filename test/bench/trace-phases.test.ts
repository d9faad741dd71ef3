/**
 * bench/trace-phases.ts: a served task split into phases by the events both runtimes' traces
 * write, the reference's extra events and anything unreadable left out.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { phaseMeans, tasksOf, traceTasks } from '../../bench/trace-phases.ts';
import { tmp } from '../loop/kit.ts';

type Ev = { event_type: string; timestamp?: unknown };
const ev = (event_type: string, timestamp: number): Ev => ({ event_type, timestamp });
/** A trace file's text: one JSON line per event. */
const jsonl = (events: Ev[]): string => `${events.map((e) => JSON.stringify(e)).join('\n')}\n`;

/** A tool-turn task as this runtime writes it: start, a turn asking for the tool, the tool, the answer, end. */
function toolTask(t0: number, [a, b, c, d]: number[]): Ev[] {
  return [
    ev('task_start', t0),
    ev('inference', t0 + a!),
    ev('tool_call', t0 + a! + b!),
    ev('inference', t0 + a! + b! + c!),
    ev('task_end', t0 + a! + b! + c! + d!),
  ];
}

describe('tasksOf', () => {
  it('groups each task from its start to its end, leaving out other events, a stamp that is not a number and a task cut before its end', () => {
    const lines = [
      ev('session_start', 1),
      ev('inference', 2), // outside any task
      ev('a2a_task_received', 10),
      ev('task_start', 10),
      ev('session_start', 10),
      { event_type: 'inference', timestamp: 'late' },
      ev('inference', 14),
      ev('session_end', 15),
      ev('task_end', 15),
      ev('task_start', 20),
      ev('inference', 22),
    ];
    expect(tasksOf(lines)).toEqual([{ kinds: ['task_start', 'inference', 'task_end'], stamps: [10, 14, 15] }]);
  });
});

describe('phaseMeans', () => {
  it('averages each phase of the tasks and the gap from each end to the next start, the next task included', () => {
    const tasks = tasksOf([...toolTask(0, [4, 1, 3, 1]), ...toolTask(10, [2, 1, 1, 0]), ...toolTask(20, [1, 0, 1, 1])]);
    const m = phaseMeans(tasks.slice(0, 2), tasks[2]);
    expect([...m]).toEqual([
      ['task_start → inference', 3],
      ['inference → tool_call', 1],
      ['tool_call → inference', 2],
      ['inference → task_end', 0.5],
      // 9 → 10 and 14 → 20
      ['task_end → task_start', 3.5],
    ]);
  });

  it('names a repeated phase apart, and leaves tasks of another shape out of the phases inside a task', () => {
    const twoTools = [
      ev('task_start', 0),
      ev('inference', 1),
      ev('tool_call', 2),
      ev('inference', 4),
      ev('tool_call', 5),
      ev('inference', 8),
      ev('task_end', 9),
    ];
    const oneTurn = [ev('task_start', 10), ev('inference', 30), ev('task_end', 31)];
    const m = phaseMeans(tasksOf([...twoTools, ...oneTurn]));
    expect([...m.keys()]).toEqual([
      'task_start → inference',
      'inference → tool_call',
      'tool_call → inference',
      "inference → tool_call'",
      "tool_call → inference'",
      'inference → task_end',
      'task_end → task_start',
    ]);
    expect(m.get('task_start → inference')).toBe(1);
    expect(m.get("tool_call → inference'")).toBe(3);
    expect(m.get('task_end → task_start')).toBe(1);
  });

  it('gives nothing for no tasks, and no end-to-start gap for one task alone', () => {
    expect(phaseMeans([]).size).toBe(0);
    expect(phaseMeans(tasksOf(toolTask(0, [1, 1, 1, 1]))).has('task_end → task_start')).toBe(false);
  });
});

describe('traceTasks', () => {
  it('reads every trace.jsonl under a folder, as the reference nests its own, in the order the tasks started, skipping lines that are not JSON', () => {
    const dir = tmp('trace-phases-');
    mkdirSync(join(dir, '.murmur', 'ses_b'), { recursive: true });
    mkdirSync(join(dir, 'ses_a'));
    writeFileSync(join(dir, '.murmur', 'ses_b', 'trace.jsonl'), `not json {\n${jsonl(toolTask(100, [1, 1, 1, 1]))}`);
    writeFileSync(join(dir, 'ses_a', 'trace.jsonl'), jsonl(toolTask(50, [2, 2, 2, 2])));
    writeFileSync(join(dir, 'ses_a', 'other.jsonl'), jsonl(toolTask(0, [1, 1, 1, 1])));
    expect(traceTasks(dir).map((t) => t.stamps[0])).toEqual([50, 100]);
  });
});
