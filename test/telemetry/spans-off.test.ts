/**
 * Tracing off (no exporter, `mur serve`'s default): a task still gets its (non-recording) task span,
 * which carries the caller's trace context, but nothing else is built for spans no one records: no
 * chat span, no attribute objects. Real driver component, real scripted provider over HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { trace, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api';
import { instrumentSession, type SessionTelemetry, type Telemetry } from '../../runtime/telemetry/index.ts';
import { capsuleYaml, driverDef, openKit, closeOpened, type Kit } from '../loop/kit.ts';

let kit: Kit | undefined;
let tel: SessionTelemetry | undefined;
afterEach(closeOpened(() => ({ kit, tel })));

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/** The API's no-op tracer (what TELEMETRY_OFF holds), recording what it is asked to start. */
function countingOffTelemetry(): { telemetry: Telemetry; started: { name: string; options: SpanOptions | undefined; span: Span }[] } {
  const noop = trace.getTracer('spans-off-test');
  const started: { name: string; options: SpanOptions | undefined; span: Span }[] = [];
  const tracer = {
    startSpan(name: string, options?: SpanOptions, ctx?: Parameters<Tracer['startSpan']>[2]) {
      const span = noop.startSpan(name, options, ctx);
      started.push({ name, options, span });
      return span;
    },
    startActiveSpan: noop.startActiveSpan.bind(noop),
  } as Tracer;
  return { telemetry: { enabled: false, tracer, flush: async () => {}, shutdown: async () => {} }, started };
}

describe('spans with tracing off', () => {
  it('a one-turn task starts only its task span, without attributes, in the caller trace', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'spans-off', tools: [] }),
      artifacts: [driverDef('anthropic')],
      script: { turns: [{ text: 'done' }, { text: 'done again' }] },
    });
    const { telemetry, started } = countingOffTelemetry();
    tel = instrumentSession(kit.session, { telemetry, metrics: false });
    for (const taskId of ['task-1', 'task-2']) {
      const r = await kit.session.runTask({
        taskId,
        contextId: 'ctx-off',
        text: 'say done',
        source: 'a2a',
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      });
      expect(r.exit).toBe('completed');
    }
    expect(started.map((s) => s.name)).toEqual(['invoke_agent spans-off', 'invoke_agent spans-off']);
    expect(started.map((s) => s.options?.attributes)).toEqual([undefined, undefined]);
    // The context what the task calls would carry on (delegate-task's traceparent) is the caller's.
    expect(started[0]!.span.spanContext()).toMatchObject({ traceId: CALLER_TRACE, spanId: CALLER_SPAN });
  });
});
