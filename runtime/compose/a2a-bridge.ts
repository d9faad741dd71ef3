/**
 * Wires a capsule session to A2A: the executor that runs each A2A task through the session, and the
 * runtime-provided `delegate-task` tool that lets the model hand work to peers.
 */
import type { ResumePoint, TaskExecutor } from '../a2a/core/executor.ts';
import { delegateTaskTool, runDelegateTask } from '../a2a/peers/delegate-task.ts';
import { peerTokens } from '../a2a/peers/credentials.ts';
import type { CapsuleSession, TaskReport, TaskSink } from '../loop/capsule-session.ts';
import type { RuntimeTool } from '../loop/tools.ts';
import { destinationOf, isAllowed } from '../net/allowlist.ts';

/**
 * The trace events that are a task's steps: those `mur run` prints a line for (cli/progress.ts
 * `stepLine`). `task_start` is one too: it tells a reader that this stream carries the steps.
 * `hook_call` (each hook's call with its outcome) is one for the console's timeline, which shows
 * every hook's decision, not only denials; `mur run` prints no line for it, so neither does `mur send`.
 */
export const STEP_EVENTS: ReadonlySet<string> = new Set([
  'task_start',
  'task_resumed',
  'inference',
  'tool_call',
  'shell',
  'call_denied',
  'hook_call',
  'network_denied',
  'compaction',
  'task_reopened',
  'spend_ceiling_reached',
  'task_end',
]);

export function taskExecutor(session: CapsuleSession): TaskExecutor {
  // Tasks run one at a time through the session (the server queues the rest).
  let chain: Promise<unknown> = Promise.resolve();
  return (ctx, ev) => {
    const run = chain.then(async () => {
      // The trace writer has already redacted each record; while this task runs, the session's
      // steps are this task's (one task at a time), so each goes onto its stream.
      const off = session.trace.onEvent((e) => {
        if (STEP_EVENTS.has(e.event_type)) ev.step(e);
      });
      const sink: TaskSink = {
        status: (m) => ev.status(m),
        artifact: (a) => ev.artifact(a),
        textChunk: (s) => ev.textChunk(s),
        thinkingChunk: (s) => ev.thinkingChunk(s),
        // The loop's resume point (loop/resume-point.ts) is plain JSON: the task machine keeps it.
        requestInput: (p, resume) => ev.requestInput(p, resume as ResumePoint | undefined),
      };
      // A task a stopped process left waiting for input continues from its resume point.
      const running = ctx.resumed
        ? session.resumeTask(ctx.resumed.point, ctx.resumed.reply, sink, ctx.signal)
        : session.runTask(
            {
              taskId: ctx.taskId,
              contextId: ctx.contextId,
              owner: ctx.owner,
              text: ctx.text,
              source: 'a2a',
              origin: ctx.origin,
              trust: ctx.trust,
              messageId: ctx.messageId,
              traceparent: ctx.traceparent,
            },
            sink,
            ctx.signal,
          );
      const report: TaskReport = await running.finally(off);
      if (report.exit === 'completed') return { state: 'completed' as const, text: report.text };
      if (report.exit === 'canceled') return { state: 'canceled' as const, reason: report.reason };
      return { state: 'failed' as const, reason: `${report.exit}: ${report.reason ?? ''}`.trim() };
    });
    chain = run.catch(() => undefined);
    return run;
  };
}

/** `delegate-task`, offered only when the allowlist names peers. */
export function runtimeToolsFor(session: CapsuleSession): RuntimeTool[] {
  const m = session.staged.manifest;
  // Entries a component's own grant lists (a tool's API, the driver's provider) are not peers; nor
  // are the entries that admit an MCP server (its tools are offered as MCP tools).
  const mcpDests = (m.mcp?.servers ?? []).map((s) => (s.url ? destinationOf(s.url) : undefined)).filter((d) => d !== undefined);
  const claimed = [
    ...m.artifacts.flatMap((a) => a.capabilities?.network?.allow ?? []),
    ...m.capabilities.network.allow.filter((a) => mcpDests.some((d) => isAllowed([a], d))),
  ];
  const endpoint = session.inferenceEndpoint;
  const def = delegateTaskTool(m.capabilities.network.allow, { entries: claimed, ...(endpoint ? { endpoint } : {}) });
  if (!def) return [];
  const credentials = peerTokens();
  return [
    {
      spec: { name: def.name, description: def.description, parameters: def.inputSchema },
      run: async (input, signal, meta) => {
        const r = await runDelegateTask(input, {
          traceparent: meta?.traceparent,
          allow: m.capabilities.network.allow,
          trust: session.currentTask?.trust === 'trusted' ? 'trusted' : 'untrusted',
          deadlineSecs: m.lifecycle.delegationDeadlineSecs,
          credentials,
          signal,
        });
        return { content: r.text, isError: r.isError };
      },
    },
  ];
}
