/**
 * Attribute names and values of the session spans: the OpenTelemetry GenAI semantic conventions
 * (Development status; the names are copied here, as the semconv package advises for incubating
 * names), the runtime's own `capsule.*` attributes, and `gen_ai.provider.name` from a driver name.
 */

export const GEN_AI = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  AGENT_NAME: 'gen_ai.agent.name',
  AGENT_VERSION: 'gen_ai.agent.version',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  USAGE_CACHE_READ_INPUT_TOKENS: 'gen_ai.usage.cache_read.input_tokens',
  USAGE_CACHE_CREATION_INPUT_TOKENS: 'gen_ai.usage.cache_creation.input_tokens',
  ERROR_TYPE: 'error.type',
} as const;

/** Runtime-specific attributes (`capsule.*`). */
export const CAPSULE = {
  TASK_ID: 'capsule.task.id',
  TASK_SOURCE: 'capsule.task.source',
  TASK_ORIGIN: 'capsule.task.origin',
  TASK_TRUST: 'capsule.task.trust',
  TASK_EXIT_STATUS: 'capsule.task.exit_status',
  TASK_TURNS: 'capsule.task.turns',
  TASK_REOPENS: 'capsule.task.reopen_count',
  TURN: 'capsule.turn',
  USAGE_SOURCE: 'capsule.usage.source',
  ESTIMATED_INPUT_TOKENS: 'capsule.estimate.input_tokens',
  ESTIMATED_OUTPUT_TOKENS: 'capsule.estimate.output_tokens',
  INFERENCE_DECISION: 'capsule.inference.decision',
  INFERENCE_CONTINUED: 'capsule.inference.continued',
  INFERENCE_ORIGIN: 'capsule.inference.origin',
  TOOL_KIND: 'capsule.tool.kind',
  TOOL_STATUS: 'capsule.tool.status',
  TOOL_INPUT_BYTES: 'capsule.tool.input_bytes',
  TOOL_OUTPUT_BYTES: 'capsule.tool.output_bytes',
  TOOL_STATE_EFFECT: 'capsule.tool.state_effect',
  SHELL_BINARY: 'capsule.shell.binary',
  SHELL_EXIT_CODE: 'process.exit.code',
  SHELL_EXECUTABLE: 'process.executable.path',
  SHELL_STDOUT_BYTES: 'capsule.shell.stdout_bytes',
  SHELL_STDERR_BYTES: 'capsule.shell.stderr_bytes',
  SHELL_TRUNCATED: 'capsule.shell.truncated',
  HOOK_NAME: 'capsule.hook.name',
  HOOK_HANDLER: 'capsule.hook.handler',
  HOOK_PHASE: 'capsule.hook.phase',
  HOOK_MODE: 'capsule.hook.mode',
  HOOK_OUTCOME: 'capsule.hook.outcome',
  HOOK_DURATION_MS: 'capsule.hook.duration_ms',
  DENIED_KIND: 'capsule.denied.kind',
  DENIED_REASON: 'capsule.denied.reason',
  DENIED_FAIL_CLOSED: 'capsule.denied.fail_closed',
  COMPACTION_OUTCOME: 'capsule.compaction.outcome',
  COMPACTION_TOKENS_BEFORE: 'capsule.compaction.tokens_before',
  COMPACTION_TOKENS_AFTER: 'capsule.compaction.tokens_after',
  COMPACTION_MESSAGES_AFTER: 'capsule.compaction.messages_after',
  COMPACTION_THRESHOLD: 'capsule.compaction.threshold',
} as const;

/**
 * `gen_ai.provider.name` from the driver artifact's name: `murmur-driver-anthropic` → `anthropic`,
 * `driver-openai` → `openai`. A name naming none of the well-known providers is used as is, minus
 * the `murmur-` / `driver-` / `-driver` affixes.
 */
export function providerFromDriver(artifact: string | undefined): string {
  if (!artifact) return 'unknown';
  const n = artifact.toLowerCase();
  for (const [needle, value] of KNOWN_PROVIDERS) if (n.includes(needle)) return value;
  const stripped = n
    .replace(/^murmur-/, '')
    .replace(/^driver-/, '')
    .replace(/-driver$/, '');
  return stripped || 'unknown';
}

const KNOWN_PROVIDERS: [string, string][] = [
  ['anthropic', 'anthropic'],
  ['openai', 'openai'],
  ['bedrock', 'aws.bedrock'],
  ['gemini', 'gcp.gemini'],
  ['vertex', 'gcp.vertex_ai'],
  ['mistral', 'mistral_ai'],
  ['groq', 'groq'],
  ['deepseek', 'deepseek'],
  ['cohere', 'cohere'],
  ['xai', 'x_ai'],
  ['perplexity', 'perplexity'],
  ['ollama', 'ollama'],
  ['vllm', 'vllm'],
];
