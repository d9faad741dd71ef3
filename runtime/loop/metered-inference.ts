/**
 * The one metered inference every driver call goes through (the loop's turns and a hook's
 * `run-inference`): admitted against the spend ceiling before dispatch (reserving the caller's
 * input count + `max_tokens`), so a refused call never reaches the driver; then the driver call;
 * then settled with the runtime's own counts of input and output, or dropped (input only) when no
 * usable answer came back. The caller measures the input (always the whole conversation, never a
 * continued payload's smaller delta) and writes its own trace events.
 */
import { parseDriverResponse, type DriverRequest, type DriverResponse } from '../inference/wire.ts';
import type { SpendMeter, SpendRefusal } from '../inference/spend.ts';
import type { TokenCounter } from '../inference/tokens.ts';
import { parseToolResult } from '../tools/result.ts';
import type { SessionComponents } from './components.ts';
import { raceAbort } from './tools.ts';

export interface MeterDeps {
  spend: SpendMeter;
  counter: TokenCounter;
  components: SessionComponents;
}

export interface MeteredCall {
  request: DriverRequest;
  /** The runtime's count of the call's input: what the admission reserves and the settlement charges. */
  inputTokens: number;
  /** Cancels the driver call (the loop's task signal); a hook's call runs to its end. */
  signal?: AbortSignal;
  /** Called once the call is admitted, just before it is dispatched (status lines, spans, clocks). */
  admitted?(): void;
  /** Refuses an answer the caller cannot use by throwing: the call is then dropped, not settled. */
  accept?(response: DriverResponse): void;
}

export type Metered =
  | { kind: 'refused'; refusal: SpendRefusal }
  /** `call`: the driver call itself failed or was cancelled; `response`: its answer was unusable. */
  | { kind: 'failed'; stage: 'call' | 'response'; error: unknown; outputTokens: number }
  | Answered;

export interface Answered {
  kind: 'answered';
  /** The driver's response text, as counted. */
  text: string;
  response: DriverResponse;
  continuationId?: string;
  outputTokens: number;
}

export async function meteredInference(m: MeterDeps, call: MeteredCall): Promise<Metered> {
  const admission = m.spend.admit(call.inputTokens, call.request.max_tokens);
  if (!admission.admitted) return { kind: 'refused', refusal: admission.refusal };
  call.admitted?.();
  let raw: unknown;
  try {
    const driver = await m.components.driver();
    const running = driver.call(['run', 'run'], [{ data: JSON.stringify(call.request), logPath: undefined }]);
    raw = call.signal ? await raceAbort(running, call.signal, () => m.components.interruptDriver()) : await running;
  } catch (error) {
    m.spend.drop(admission.ticket);
    return { kind: 'failed', stage: 'call', error, outputTokens: 0 };
  }
  let outputTokens = 0;
  try {
    const result = parseToolResult(raw);
    const text = result.data ?? '';
    outputTokens = await m.counter.count(text);
    const response = parseDriverResponse(text);
    call.accept?.(response);
    m.spend.settle(admission.ticket, { inputTokens: call.inputTokens, outputTokens });
    return { kind: 'answered', text, response, continuationId: result.continuationId, outputTokens };
  } catch (error) {
    m.spend.drop(admission.ticket);
    return { kind: 'failed', stage: 'response', error, outputTokens };
  }
}
