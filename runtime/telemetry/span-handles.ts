/**
 * The spans that must exist while work runs, each opened in a session's Scope and ended by the
 * caller with the outcome: `execute_tool` (its traceparent goes out on the tool's A2A calls),
 * `compaction`, `hook <name>` and `hook_dispatch <handler>`. Without a scope (telemetry not
 * attached) each is a no-op handle.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { CAPSULE, GEN_AI } from './semconv.ts';
import { formatTraceparent } from './traceparent.ts';
import { HOOK_FAULTS, clean, describeError, errorType, truncate } from './span-attrs.ts';
import type { Scope } from './span-scope.ts';

export interface ToolSpan {
  /** The W3C traceparent of this span, to send on outgoing A2A calls made by the tool. */
  readonly traceparent: string | undefined;
  end(outcome: { status: 'ok' | 'error' | 'denied'; kind?: string; isError?: boolean } | { error: unknown }): void;
}

export const NOOP_TOOL_SPAN: ToolSpan = { traceparent: undefined, end: () => {} };

/** Opens `execute_tool <name>` under the task span; end it with the dispatch outcome. */
export function openToolSpan(s: Scope | undefined, o: { name: string; callId?: string; turn?: number; known?: boolean }): ToolSpan {
  if (!s) return NOOP_TOOL_SPAN;
  const name = truncate(o.name, 64) ?? '';
  const span = s.tracer.startSpan(
    `execute_tool ${name}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: clean({
        [GEN_AI.OPERATION_NAME]: 'execute_tool',
        [GEN_AI.TOOL_NAME]: name,
        [GEN_AI.TOOL_CALL_ID]: o.callId,
        [GEN_AI.TOOL_TYPE]: 'function',
        [GEN_AI.CONVERSATION_ID]: s.task?.contextId,
        [CAPSULE.TURN]: o.turn,
      }),
    },
    s.task?.ctx ?? ROOT_CONTEXT,
  );
  const open = s.push(span, 'tool', s.task?.ctx ?? ROOT_CONTEXT);
  let ended = false;
  return {
    traceparent: formatTraceparent(span.spanContext()),
    end(outcome) {
      if (ended) return;
      ended = true;
      s.pop(open);
      if ('error' in outcome) {
        span.setAttribute(GEN_AI.ERROR_TYPE, errorType(outcome.error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: describeError(outcome.error) });
      } else {
        span.setAttributes(clean({ [CAPSULE.TOOL_KIND]: outcome.kind, [CAPSULE.TOOL_STATUS]: outcome.status }));
        if (outcome.status !== 'ok' || outcome.isError) {
          span.setAttribute(GEN_AI.ERROR_TYPE, outcome.status === 'denied' ? 'denied' : 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.status === 'denied' ? 'denied by a policy hook' : 'the tool reported an error' });
        }
      }
      span.end();
    },
  };
}

export interface CompactionSpan {
  end(outcome: { kind: string; hook?: string; message?: string; reason?: string }): void;
}

export const NOOP_COMPACTION_SPAN: CompactionSpan = { end: () => {} };

/**
 * Opens `compaction` around the on-compaction dispatch. `end` takes the dispatch outcome; a
 * `replaced` outcome stays open until the `compaction` / `compaction_refused` event that follows
 * it (so tokens_after lands on the span), closed at the latest when the task ends.
 */
export function openCompactionSpan(s: Scope | undefined, o: { turn?: number; tokensBefore?: number; threshold?: number }): CompactionSpan {
  if (!s) return NOOP_COMPACTION_SPAN;
  s.finishCompaction();
  const span = s.tracer.startSpan(
    'compaction',
    {
      kind: SpanKind.INTERNAL,
      attributes: clean({
        [CAPSULE.TURN]: o.turn,
        [CAPSULE.COMPACTION_TOKENS_BEFORE]: o.tokensBefore,
        [CAPSULE.COMPACTION_THRESHOLD]: o.threshold,
        [GEN_AI.CONVERSATION_ID]: s.task?.contextId,
      }),
    },
    s.task?.ctx ?? ROOT_CONTEXT,
  );
  const open = s.push(span, 'compaction', s.task?.ctx ?? ROOT_CONTEXT);
  const c = { span, pending: false };
  s.compaction = c;
  return {
    end(outcome) {
      s.pop(open);
      span.setAttributes(clean({ [CAPSULE.COMPACTION_OUTCOME]: outcome.kind, [CAPSULE.HOOK_NAME]: outcome.hook }));
      if (outcome.kind === 'fatal') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message ?? 'compaction hook failed' });
      if (outcome.kind === 'replaced') {
        // Left open for the loop's `compaction` (or `compaction_refused`) trace event, which carries
        // tokens_after and messages_after; the loop counts those tokens asynchronously (the counter
        // runs in a worker), so no fixed delay would do. The task's end closes it at the latest.
        c.pending = true;
        return;
      }
      if (s.compaction === c) s.finishCompaction();
    },
  };
}

export interface HookSpan {
  /**
   * `outcome`: the arm the hook returned (`none`, `deny`, `replace-context`, `seed-context`,
   * `reopen-task`, `artifact`, …) or the fault (`error`, `timeout`, `queue-overflow`,
   * `unhonored-arm`). A fault marks the span as an error; `detail` becomes its status message.
   */
  end(outcome: string, detail?: string): void;
}

export const NOOP_HOOK_SPAN: HookSpan = { end: () => {} };

/**
 * For the hook bus: one span per hook per dispatch, `hook <name>`, with the handler, the hook's
 * execution mode and the outcome. A blocking hook's span is the parent of what the hook causes
 * (its `run-inference` chat spans); an async hook's span hangs off the task span.
 */
export function openHookSpan(
  s: Scope | undefined,
  o: { hook: string; handler: string; mode?: 'blocking' | 'async'; phase?: 'decision' | 'observation' },
): HookSpan {
  if (!s) return NOOP_HOOK_SPAN;
  const parent = o.mode === 'async' ? (s.task?.ctx ?? ROOT_CONTEXT) : s.parent();
  const span = s.tracer.startSpan(
    `hook ${o.hook}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: clean({ [CAPSULE.HOOK_NAME]: o.hook, [CAPSULE.HOOK_HANDLER]: o.handler, [CAPSULE.HOOK_MODE]: o.mode, [CAPSULE.HOOK_PHASE]: o.phase }),
    },
    parent,
  );
  const open = o.mode === 'async' ? undefined : s.push(span, 'hook', parent);
  let ended = false;
  return {
    end(outcome, detail) {
      if (ended) return;
      ended = true;
      if (open) s.pop(open);
      span.setAttribute(CAPSULE.HOOK_OUTCOME, outcome);
      if (HOOK_FAULTS.has(outcome)) {
        span.setAttribute(GEN_AI.ERROR_TYPE, outcome);
        span.setStatus({ code: SpanStatusCode.ERROR, ...(detail ? { message: truncate(detail, 512)! } : {}) });
      }
      span.end();
    },
  };
}

/** Opens `hook_dispatch <handler>` (one per dispatch of a handler to all bound hooks). */
export function openHandlerSpan(s: Scope | undefined, o: { handler: string; phase?: 'decision' | 'observation' }): HookSpan {
  if (!s) return NOOP_HOOK_SPAN;
  const span = s.tracer.startSpan(
    `hook_dispatch ${o.handler}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: clean({ [CAPSULE.HOOK_HANDLER]: o.handler, [CAPSULE.HOOK_PHASE]: o.phase }),
    },
    s.parent(),
  );
  const open = s.push(span, 'handler');
  let ended = false;
  return {
    end(outcome, detail) {
      if (ended) return;
      ended = true;
      s.pop(open);
      span.setAttribute(CAPSULE.HOOK_OUTCOME, outcome);
      if (HOOK_FAULTS.has(outcome)) {
        span.setAttribute(GEN_AI.ERROR_TYPE, outcome);
        span.setStatus({ code: SpanStatusCode.ERROR, ...(detail ? { message: truncate(detail, 512)! } : {}) });
      }
      span.end();
    },
  };
}
