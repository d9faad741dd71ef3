/**
 * A driver call beside the agent loop's turns (a hook's run-inference, an MCP server's sampling
 * request): one metered completion through the capsule's own driver, against the session's spend
 * ceiling, traced with its origin.
 */
import { MurError } from '../errors.ts';
import { fromHookMessages } from '../hooks/conversation.ts';
import type { HookMessage } from '../hooks/port.ts';
import { promptCacheKey } from '../inference/cache-key.ts';
import { textOf } from '../inference/messages.ts';
import type { SpendMeter } from '../inference/spend.ts';
import type { TokenCounter } from '../inference/tokens.ts';
import { buildDriverRequest } from '../inference/wire.ts';
import type { StagedCapsule } from '../session/stage.ts';
import type { TraceWriter } from '../trace/writer.ts';
import type { SessionComponents } from './components.ts';
import { meteredInference } from './metered-inference.ts';

export class SpendRefusedError extends MurError {
  readonly spendRefused = true;
  constructor(message: string) {
    super('E-INF-011', message, { hint: 'raise inference.max_session_tokens' });
    this.name = 'SpendRefusedError';
  }
}

export interface SideRequest {
  messages: HookMessage[];
  systemPrompt?: string;
  model?: string;
}

/** What a side call uses of its session. */
export interface SideDeps {
  readonly staged: StagedCapsule;
  readonly counter: TokenCounter;
  readonly spend: SpendMeter;
  readonly components: SessionComponents;
  readonly trace: TraceWriter;
}

/** A driver call beside the loop's turns (a hook's run-inference, an MCP sampling request). */
export async function sideInference(s: SideDeps, req: SideRequest, origin: string) {
  const inf = s.staged.manifest.inference!;
  const model = req.model ?? inf.model;
  const messages = fromHookMessages(
    req.messages.map((m) => (m.role === 'tool' ? m : m)),
    'replace-context',
  );
  const request = buildDriverRequest({
    model,
    maxTokens: inf.maxTokens,
    system: req.systemPrompt ?? '',
    messages,
    tools: [],
    promptCacheKey: promptCacheKey(s.staged.manifest.name, s.staged.manifest.version),
  });
  const inputTokens = await s.counter.countJson(request);
  let started = 0;
  const metered = await meteredInference(
    { spend: s.spend, counter: s.counter, components: s.components },
    {
      request,
      inputTokens,
      admitted: () => (started = Date.now()),
      // A model the provider rejects is an error for the hook: never a silent fallback.
      accept: (resp) => {
        if (resp.stop_reason === 'error') throw new Error(`driver reported an error for model ${model}: ${resp.error ?? 'no detail'}`);
      },
    },
  );
  if (metered.kind === 'refused') {
    s.trace.write('spend_ceiling_reached', { origin, requested: metered.refusal.requested, limit: metered.refusal.limit });
    throw new SpendRefusedError(metered.refusal.message);
  }
  if (metered.kind === 'failed') {
    s.trace.write('inference', {
      origin,
      model,
      input_tokens: inputTokens,
      output_tokens: metered.outputTokens,
      decision: 'error',
      duration_ms: Date.now() - started,
      error: (metered.error as Error).message,
    });
    throw metered.error;
  }
  const { outputTokens } = metered;
  const text = textOf({ content: metered.response.content });
  s.trace.write('inference', {
    origin,
    model,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    decision: 'end_turn',
    duration_ms: Date.now() - started,
    reported_usage: metered.response.usage,
  });
  return { text, modelUsed: model, inputTokens: BigInt(inputTokens), outputTokens: BigInt(outputTokens) };
}
