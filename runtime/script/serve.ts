/**
 * Serving a script capsule over A2A: the TaskExecutor that runs each A2A task through a
 * ScriptSession (tasks one at a time, in arrival order). A tool-call artifact is streamed per
 * invoke, tools' text chunks reach the task's stream, and a tool's request-input puts the task in
 * `input-required` until the reply arrives. Wiring in `mur serve`:
 *
 *   const session = await ScriptSession.open(staged);
 *   startA2AServer({ card, executor: scriptTaskExecutor(session), ... });
 *   …  await session.close(exitStatus);
 */
import type { TaskExecutor } from '../a2a/core/executor.ts';
import type { ScriptSession } from './script-session.ts';

export function scriptTaskExecutor(session: ScriptSession): TaskExecutor {
  return async (ctx, ev) => {
    const r = await session.runTask(
      {
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        text: ctx.text,
        trust: ctx.trust,
        origin: ctx.origin,
        ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
      },
      {
        signal: ctx.signal,
        source: 'a2a',
        io: {
          textChunk: (s) => ev.textChunk(s),
          thinkingChunk: (s) => ev.thinkingChunk(s),
          requestInput: (p) => ev.requestInput(p),
          artifact: (a) => ev.artifact(a),
        },
      },
    );
    if (r.exit === 'completed') return { state: 'completed', text: r.text ?? '' };
    if (r.exit === 'canceled') return { state: 'canceled', ...(r.reason ? { reason: r.reason } : {}) };
    return { state: 'failed', reason: r.reason ?? 'the capsule failed' };
  };
}
