/**
 * The spans made from trace events alone (a TraceWriter listener, synchronous with the write):
 * the task span from task_start/task_end, the chat span's end from `inference`, and the
 * after-the-fact spans and span events (shell, call_denied, hook calls, network denials, spend
 * ceiling, compaction outcome).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { basename } from 'node:path';
import type { TraceEvent } from '../trace/writer.ts';
import { CAPSULE, GEN_AI } from './semconv.ts';
import { HOOK_FAULTS, clean, num, str, truncate } from './span-attrs.ts';
import type { Scope } from './span-scope.ts';

/** Makes the spans a trace event stands for (a TraceWriter listener, synchronous with the write). */
export function spanFromEvent(s: Scope, e: TraceEvent & { timestamp: number }): void {
  switch (e.event_type) {
    case 'task_start':
      s.startTask(e);
      return;
    case 'task_end':
      s.endTask(e);
      return;
    case 'inference':
      s.onInference(e);
      return;
    case 'tool_call': {
      const tool = s.openTool();
      tool?.setAttributes(
        clean({
          [CAPSULE.TOOL_INPUT_BYTES]: num(e.input_bytes),
          [CAPSULE.TOOL_OUTPUT_BYTES]: num(e.output_bytes),
          [CAPSULE.TOOL_STATE_EFFECT]: str(e.state_effect),
        }),
      );
      return;
    }
    case 'shell':
      shellSpan(s, e);
      return;
    case 'call_denied':
      deniedSpan(s, e);
      return;
    case 'hook_call':
      hookCallSpan(s, e);
      return;
    case 'hook_dispatch_error': {
      const target = s.stack.at(-1)?.span ?? s.task?.span;
      target?.addEvent(
        'hook_dispatch_error',
        clean({
          [CAPSULE.HOOK_NAME]: str(e.hook_name),
          [CAPSULE.HOOK_HANDLER]: str(e.event),
          'capsule.hook.arm': str(e.arm),
          'capsule.hook.detail': truncate(str(e.detail), 512),
        }),
      );
      return;
    }
    case 'network_denied': {
      // On the tool (or driver) call that made the request, else the task.
      const m = /^([a-z]+):\/\/(.*):(\d+)$/.exec(str(e.destination) ?? '');
      (s.stack.at(-1)?.span ?? s.task?.span)?.addEvent(
        'network_denied',
        clean({
          'capsule.component.kind': str(e.component_kind),
          'capsule.component.name': str(e.component),
          'url.scheme': m?.[1],
          'server.address': m?.[2],
          'server.port': m ? Number(m[3]) : undefined,
        }),
      );
      return;
    }
    case 'spend_ceiling_reached':
      (s.stack.at(-1)?.span ?? s.task?.span)?.addEvent(
        'spend_ceiling_reached',
        clean({
          'capsule.spend.requested': num(e.requested),
          'capsule.spend.spent': num(e.spent),
          'capsule.spend.limit': num(e.limit),
          [CAPSULE.INFERENCE_ORIGIN]: str(e.origin),
        }),
      );
      return;
    case 'task_reopened':
      s.task?.span.addEvent('task_reopened', clean({ [CAPSULE.HOOK_NAME]: str(e.hook_name), 'capsule.task.reopen_number': num(e.reopen_number) }));
      return;
    case 'compaction':
      s.finishCompaction(
        clean({
          [CAPSULE.COMPACTION_OUTCOME]: 'replaced',
          [CAPSULE.HOOK_NAME]: str(e.hook),
          [CAPSULE.COMPACTION_TOKENS_AFTER]: num(e.tokens_after),
          [CAPSULE.COMPACTION_MESSAGES_AFTER]: num(e.messages_after),
        }),
      );
      return;
    case 'compaction_refused':
      s.finishCompaction(
        clean({ [CAPSULE.COMPACTION_OUTCOME]: 'refused', [CAPSULE.HOOK_NAME]: str(e.hook), 'capsule.compaction.reason': truncate(str(e.reason), 512) }),
      );
      return;
    case 'session_end':
      s.endTask(undefined, 'session_ended');
      return;
    default:
  }
}

/** `shell <binary>`: the process a shell tool ran, under its tool call, over the time it took. */
function shellSpan(s: Scope, e: TraceEvent & { timestamp: number }): void {
  const bin = str(e.binary);
  const dur = num(e.duration_ms) ?? 0;
  const span = s.tracer.startSpan(
    `shell ${bin ? basename(bin) : ''}`.trim(),
    {
      kind: SpanKind.INTERNAL,
      startTime: e.timestamp - dur,
      attributes: clean({
        [CAPSULE.SHELL_BINARY]: bin ? basename(bin) : undefined,
        [CAPSULE.SHELL_EXECUTABLE]: bin,
        [CAPSULE.SHELL_EXIT_CODE]: num(e.exit_code),
        [CAPSULE.SHELL_STDOUT_BYTES]: num(e.stdout_bytes),
        [CAPSULE.SHELL_STDERR_BYTES]: num(e.stderr_bytes),
        [CAPSULE.SHELL_TRUNCATED]: e.truncated === true ? true : undefined,
        [CAPSULE.TURN]: num(e.turn),
      }),
    },
    s.openToolCtx() ?? s.parent(),
  );
  span.end(e.timestamp);
}

/** `call_denied <tool|binary>`: a policy hook refused the call. */
function deniedSpan(s: Scope, e: TraceEvent & { timestamp: number }): void {
  const subject = str(e.tool_name) ?? (str(e.binary) ? basename(str(e.binary)!) : undefined);
  const span = s.tracer.startSpan(
    `call_denied${subject ? ` ${subject}` : ''}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: clean({
        [CAPSULE.HOOK_NAME]: str(e.hook),
        [CAPSULE.DENIED_KIND]: str(e.kind),
        [CAPSULE.DENIED_REASON]: truncate(str(e.reason), 512),
        [CAPSULE.DENIED_FAIL_CLOSED]: e.fail_closed === true,
        [GEN_AI.TOOL_NAME]: subject,
        [CAPSULE.TURN]: num(e.turn),
      }),
      // Under the refused tool call itself (a sibling of the dispatch that decided it).
    },
    s.openToolCtx() ?? s.parent(),
  );
  span.end();
}

/** `hook <name>`: one hook's call, reported after the fact by the hook bus. */
function hookCallSpan(s: Scope, e: TraceEvent & { timestamp: number }): void {
  // One hook's call, after the fact: it spans the call's own time (duration_ms), under the
  // open `hook_dispatch <handler>` span for a blocking hook, under the task for an async one.
  const dur = num(e.duration_ms) ?? 0;
  const async = e.mode === 'async';
  const outcome = str(e.outcome) ?? 'none';
  const span = s.tracer.startSpan(
    `hook ${str(e.hook_name) ?? ''}`.trim(),
    {
      kind: SpanKind.INTERNAL,
      startTime: e.timestamp - dur,
      attributes: clean({
        [CAPSULE.HOOK_NAME]: str(e.hook_name),
        [CAPSULE.HOOK_HANDLER]: str(e.event),
        [CAPSULE.HOOK_MODE]: str(e.mode),
        [CAPSULE.HOOK_OUTCOME]: outcome,
        [CAPSULE.HOOK_DURATION_MS]: dur,
      }),
    },
    async ? (s.task?.ctx ?? ROOT_CONTEXT) : s.parent(),
  );
  if (HOOK_FAULTS.has(outcome)) {
    span.setAttribute(GEN_AI.ERROR_TYPE, outcome);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end(e.timestamp);
}
