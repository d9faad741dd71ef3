/**
 * Usage normalisation shared by spans and metrics: one `inference` trace event's token usage in
 * OpenTelemetry terms (`gen_ai.usage.*`), provider-reported members preferred over the host's count.
 */

export interface NormalisedUsage {
  /** All input tokens, cached ones included (gen_ai.usage.input_tokens). */
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  inputSource: 'provider' | 'host';
  outputSource: 'provider' | 'host';
}

/**
 * One `inference` event's usage in OTel terms. Provider-reported members win over the host's
 * count; Anthropic's `input_tokens` excludes cache reads and writes, so they are added back
 * (gen_ai.usage.input_tokens includes cached tokens); OpenAI's `prompt_tokens` already includes them.
 */
export function normaliseUsage(e: Record<string, unknown>, provider: string): NormalisedUsage {
  const r = (e.reported_usage && typeof e.reported_usage === 'object' ? e.reported_usage : {}) as Record<string, unknown>;
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);
  const cacheRead = num(r.cached_tokens);
  const cacheWrite = num(r.cache_write_tokens);
  const rIn = num(r.input_tokens);
  const rOut = num(r.output_tokens);
  const excludesCache = provider === 'anthropic';
  const input = rIn !== undefined ? rIn + (excludesCache ? (cacheRead ?? 0) + (cacheWrite ?? 0) : 0) : (num(e.input_tokens) ?? 0);
  return {
    input,
    output: rOut ?? num(e.output_tokens) ?? 0,
    ...(cacheRead !== undefined ? { cacheRead } : {}),
    ...(cacheWrite !== undefined ? { cacheWrite } : {}),
    inputSource: rIn !== undefined ? 'provider' : 'host',
    outputSource: rOut !== undefined ? 'provider' : 'host',
  };
}
