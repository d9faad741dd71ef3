/**
 * `hook_dispatch <handler>` spans around a session's HookPort: one span per dispatch of a handler
 * to the hooks bound to it, with the handler, the phase (decision / observation for on-tool-call and
 * on-shell) and what came of it. A decorator: `tracedHookPort(port, trace)` is a new HookPort that
 * calls `port`; the port itself is not touched. The handler names, phases and committed arms come
 * from the hook contract (PORT_METHODS, i.e. the commit table). Per-hook spans inside it are the
 * bus's to make, with startHookSpan.
 *
 * Spans exist only while the session's trace has spans attached (attachSpans); until then, and with
 * telemetry off, each dispatch costs one map lookup.
 */
import { PORT_METHODS, committedArm, type CompactionOutcome, type DispatchMethod, type HookPort } from '../hooks/port.ts';
import type { TraceWriter } from '../trace/writer.ts';
import { startHandlerSpan } from './spans.ts';

/** A compaction that ended the session, or whose replacement was refused, is a fault on its span. */
function faultOf(method: DispatchMethod, answer: unknown): { outcome: string; detail: string } | undefined {
  if (method !== 'compaction') return undefined;
  const c = answer as CompactionOutcome;
  if (c?.kind === 'fatal') return { outcome: 'error', detail: c.message };
  if (c?.kind === 'invalid') return { outcome: 'unhonored-arm', detail: c.reason };
  return undefined;
}

/** `port` with a `hook_dispatch` span around each dispatch method; drain and close pass through. */
export function tracedHookPort(port: HookPort, trace: TraceWriter): HookPort {
  const traced = {
    drain: (budgetMs?: number) => port.drain(budgetMs),
    close: () => port.close(),
  } as Partial<Record<keyof HookPort, (...a: never[]) => Promise<unknown>>>;
  for (const method of Object.keys(PORT_METHODS) as DispatchMethod[]) {
    const { handler, phase } = PORT_METHODS[method];
    const call = port[method].bind(port) as (ev: Record<string, unknown>) => Promise<unknown>;
    traced[method] = async (ev: Record<string, unknown>) => {
      const span = startHandlerSpan(trace, { handler, ...(phase ? { phase } : {}) });
      try {
        const r = await call(ev);
        const fault = faultOf(method, r);
        if (fault) span.end(fault.outcome, fault.detail);
        else span.end(committedArm(method, r));
        return r;
      } catch (e) {
        span.end('error', e instanceof Error ? e.message : String(e));
        throw e;
      }
    };
  }
  return traced as HookPort;
}
