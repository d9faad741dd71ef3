/**
 * A task's attempts (capsule-session.ts runTask and resumeTask): the first, then one more each
 * time an on-task-end hook reopens it with feedback, within max_task_reopens and the task's
 * max_turns; on-task-end runs after each. Where the task is (reopens, turns, feedback) is kept in
 * `deps.progress`, so a resume point taken during a tool call carries it.
 */
import { failureInfo } from '../errors.ts';
import type { ConversationMessage, ToolCallBlock } from '../inference/wire.ts';
import { userText } from '../inference/messages.ts';
import type { ConversationOwner } from '../inference/conversation-store.ts';
import { runAttempt, type AttemptResult, type LoopDeps, type LoopEvents, type TaskProgress } from './agent-loop.ts';

/** Why a session ended on its own, and the `exit_status` its `session_end` carries. */
export interface SessionEnd {
  exitStatus: 'failed' | 'spend_ceiling_reached';
  reason: string;
}

/** What hooks read of the running task (`task-io`): the input as given so far and the last output. */
export interface CurrentIo {
  asGiven: string;
  output?: string;
}

export interface AttemptsRun {
  task: { taskId: string; contextId: string; owner?: ConversationOwner; text: string };
  history: ConversationMessage[];
  sink: LoopEvents;
  signal: AbortSignal;
  current: CurrentIo;
  progress: TaskProgress;
  /** A resumed task: the first attempt begins inside this turn, at these tool calls. */
  from?: { turn: number; calls: ToolCallBlock[] };
  /** The session's end, once a compaction error ended it (set here when this task's attempt did). */
  ended: { value: SessionEnd | undefined };
}

export async function runAttempts(deps: LoopDeps, r: AttemptsRun): Promise<{ result: AttemptResult; reopens: number; turnsUsed: number }> {
  const m = deps.manifest;
  const inf = m.inference!;
  const { task, history, progress, current } = r;
  let result: AttemptResult;
  let from = r.from;
  for (;;) {
    result = await runAttempt(deps, task, history, inf.maxTurns - progress.turnsBefore, r.sink, r.signal, from).catch((e: unknown) => ({
      exit: 'failed' as const,
      reason: e instanceof Error ? e.message : String(e),
      turns: 0,
      ...(failureInfo(e) ? { error: failureInfo(e) } : {}),
    }));
    from = undefined;
    progress.turnsBefore += result.turns;
    current.output = result.text;
    if (result.endsSession)
      r.ended.value = {
        exitStatus: result.exit === 'spend_ceiling_reached' ? 'spend_ceiling_reached' : 'failed',
        reason: result.reason ?? 'on-compaction failed',
      };
    // Once per task, whatever its outcome.
    const end = await deps.hooks.taskEnd({ taskId: task.taskId, exitStatus: result.exit === 'completed' ? 'ok' : result.exit });
    if (!end.reopen) break;
    // A canceled task, one out of budget, or one that ended the session is not run again.
    const notRerun = r.ended.value
      ? 'session_ended'
      : result.exit === 'canceled' || result.exit === 'spend_ceiling_reached'
        ? result.exit
        : r.signal.aborted
          ? 'input_timeout'
          : undefined;
    if (notRerun || progress.reopens >= m.lifecycle.maxTaskReopens || progress.turnsBefore >= inf.maxTurns) {
      deps.trace.write('task_reopen_refused', {
        task_id: task.taskId,
        hook_name: end.reopen.hook,
        reason: notRerun ?? (progress.reopens >= m.lifecycle.maxTaskReopens ? 'max_task_reopens' : 'max_turns'),
      });
      if (result.exit === 'completed')
        result = { ...result, exit: 'failed' as const, reason: `reopen budget exhausted (hook ${end.reopen.hook} asked to reopen)` };
      break;
    }
    progress.reopens++;
    progress.feedback.push(`- ${end.reopen.hook}: ${end.reopen.feedback}`);
    deps.trace.write('task_reopened', { task_id: task.taskId, hook_name: end.reopen.hook, reason: end.reopen.feedback, reopen_number: progress.reopens });
    // The reopened attempt continues the same conversation, with the feedback as a new turn.
    const note = `# Reopen feedback\n${progress.feedback.join('\n')}`;
    history.push(userText(note));
    current.asGiven = `${task.text}\n\n${note}`;
    current.output = undefined;
  }
  return { result, reopens: progress.reopens, turnsUsed: progress.turnsBefore };
}
