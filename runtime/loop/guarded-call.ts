/**
 * The one guarded call every model-requested tool goes through (WASM tool, shell command, runtime
 * tool): the policy decision point, then the act, then its observation — in that order, once.
 * A refusal (the bus decides fail-closed: a policy hook that fails refuses) never runs the act; an
 * act that throws is handed back to the model as an error result, unless the task was cancelled,
 * which ends the call with the cancellation itself.
 */
import type { Decision } from '../hooks/port.ts';

export type ToolKind = 'wasm' | 'shell' | 'runtime' | 'unknown';

export interface ToolOutcome {
  /** Text handed back to the model. */
  content: string;
  isError: boolean;
  /** For the task's tool-call artifact. */
  status: 'ok' | 'error' | 'denied';
  durationMs: number;
  kind: ToolKind;
}

/** What an act that was allowed ended with: the model's text and whether it is an error result. */
export interface Acted {
  content: string;
  status: 'ok' | 'error';
}

export interface GuardedAct<R extends Acted> {
  kind: ToolKind;
  /** When the call began (Date.now()): durations count from here, the decision included. */
  started: number;
  signal: AbortSignal;
  /** The policy decision point. */
  decide(): Promise<Decision>;
  /** The act itself. */
  run(): Promise<R>;
  /** The act threw (and the task was not cancelled): what the model is told instead. */
  failed(e: unknown): R;
  /** The trace event and the observation hooks, with the act's result and duration. */
  observe(r: R, durationMs: number): Promise<void>;
}

export async function guardedCall<R extends Acted>(act: GuardedAct<R>): Promise<ToolOutcome> {
  const decision = await act.decide();
  if (!decision.allowed) {
    return { content: decision.agentMessage, isError: true, status: 'denied', durationMs: Date.now() - act.started, kind: act.kind };
  }
  let r: R;
  try {
    r = await act.run();
  } catch (e) {
    if (act.signal.aborted) throw e;
    r = act.failed(e);
  }
  const durationMs = Date.now() - act.started;
  await act.observe(r, durationMs);
  return { content: r.content, isError: r.status === 'error', status: r.status, durationMs, kind: act.kind };
}
