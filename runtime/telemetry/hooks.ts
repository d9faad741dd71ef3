/**
 * `hook_dispatch <handler>` spans around the session's HookPort: one span per dispatch of a
 * handler to the hooks bound to it, with the handler, the phase (decision / observation for
 * on-tool-call and on-shell) and what came of it. Installed by instrumentSession on the session's
 * hook bus instance (never on the shared NO_HOOKS). Per-hook spans inside it are the bus's to make,
 * with startHookSpan.
 */
import type { HookPort } from '../hooks/port.ts';
import type { TraceWriter } from '../trace/writer.ts';
import { startHandlerSpan } from './spans.ts';

type Method = Exclude<keyof HookPort, 'drain' | 'close'>;

const HANDLERS: Record<Method, { handler: string; phase?: 'decision' | 'observation'; outcome: (r: unknown) => string }> = {
  sessionStart: { handler: 'on-session-start', outcome: () => 'none' },
  taskStart: { handler: 'on-task-start', outcome: (r) => ((r as { messages?: unknown[] })?.messages?.length ? 'seed-context' : 'none') },
  inference: { handler: 'on-inference', outcome: (r) => (Array.isArray(r) && r.length ? 'artifact' : 'none') },
  toolDecision: { handler: 'on-tool-call', phase: 'decision', outcome: (r) => ((r as { allowed?: boolean })?.allowed === false ? 'deny' : 'none') },
  toolObserved: { handler: 'on-tool-call', phase: 'observation', outcome: () => 'none' },
  shellDecision: { handler: 'on-shell', phase: 'decision', outcome: (r) => ((r as { allowed?: boolean })?.allowed === false ? 'deny' : 'none') },
  shellObserved: { handler: 'on-shell', phase: 'observation', outcome: () => 'none' },
  compaction: { handler: 'on-compaction', outcome: (r) => String((r as { kind?: string })?.kind ?? 'none') },
  taskEnd: { handler: 'on-task-end', outcome: (r) => ((r as { reopen?: unknown })?.reopen ? 'reopen-task' : 'none') },
  sessionEnd: { handler: 'on-session-end', outcome: () => 'none' },
};

const wrapped = new WeakSet<object>();

/** Wraps the dispatch methods of `port` in place. Idempotent. */
export function instrumentHookPort(port: HookPort, trace: TraceWriter): void {
  if (wrapped.has(port)) return;
  wrapped.add(port);
  const target = port as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  for (const [method, spec] of Object.entries(HANDLERS)) {
    const orig = target[method];
    if (typeof orig !== 'function') continue;
    const bound = orig.bind(port);
    target[method] = async (...args: unknown[]) => {
      const span = startHandlerSpan(trace, { handler: spec.handler, ...(spec.phase ? { phase: spec.phase } : {}) });
      try {
        const r = await bound(...args);
        span.end(spec.outcome(r));
        return r;
      } catch (e) {
        span.end('error', e instanceof Error ? e.message : String(e));
        throw e;
      }
    };
  }
}
