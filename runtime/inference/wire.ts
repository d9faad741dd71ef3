/**
 * The driver wire format (research/murmur.md §3, the reference runtime's `agent.rs`), so driver
 * components built for the reference runtime work here unchanged. The request travels as JSON in
 * `tool-input.data`, the response comes back as JSON in `tool-result.data`.
 *
 * Request (key order as the reference writes it):
 *   { model, max_tokens, messages, tools, params, system, continuation_id?, prompt_cache_key }
 * Message:
 *   { role: user|assistant|tool, content: [{type:"text",text} | {type:"tool_call",id,name,input}],
 *     tool_call_id?, is_error? }
 * Tool: { name, parameters, description? }
 * Response:
 *   { stop_reason: tool_call|end_turn|max_tokens|error, content: [...], usage?, error? }
 *
 * Message bookkeeping (`id`, `source-id`, anything else the runtime carries alongside a message) is
 * stripped here: the payload is built from an allowlist of wire fields, never by copying objects.
 */
import { MurError } from '../errors.ts';
import { parseUsageReport, type ReportedUsage, type UsageDrop } from './usage.ts';

export const ROLES = ['user', 'assistant', 'tool'] as const;
export type Role = (typeof ROLES)[number];
export const STOP_REASONS = ['tool_call', 'end_turn', 'max_tokens', 'error'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

export interface TextBlock {
  type: 'text';
  text: string;
}
export interface ToolCallBlock {
  type: 'tool_call';
  id: string;
  name: string;
  /** The tool input: a JSON object. */
  input: Record<string, unknown>;
}
export type ContentBlock = TextBlock | ToolCallBlock;

/** Exactly what reaches the driver for one message. */
export interface WireMessage {
  role: Role;
  content: ContentBlock[];
  tool_call_id?: string;
  is_error?: boolean;
}

/**
 * A message as the runtime holds it: the wire fields plus bookkeeping that never reaches the
 * provider (`id` = `msg_<uuid>`, `source-id` opaque). Extra fields are allowed and stripped.
 */
export interface ConversationMessage extends WireMessage {
  id?: string;
  'source-id'?: string;
  [bookkeeping: string]: unknown;
}

export interface ToolSpec {
  name: string;
  /** JSON Schema of the tool's input. */
  parameters: unknown;
  description?: string;
}

export interface DriverRequest {
  model: string;
  max_tokens: number;
  messages: WireMessage[];
  tools: ToolSpec[];
  params: Record<string, unknown>;
  system: string;
  continuation_id?: string;
  prompt_cache_key: string;
}

export interface BuildDriverRequestInput {
  model: string;
  maxTokens: number;
  system: string;
  /** The messages to send this turn (the full history, or the continuation delta); bookkeeping is stripped. */
  messages: readonly (WireMessage | ConversationMessage)[];
  tools: readonly ToolSpec[];
  params?: Record<string, unknown>;
  promptCacheKey: string;
  /** Sent only when non-empty. */
  continuationId?: string;
}

function bad(code: string, message: string, hint: string, field?: string): MurError {
  return new MurError(code, message, field === undefined ? { hint } : { hint, location: { field } });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function wireBlock(b: unknown, field: string, code: string, what: string): ContentBlock {
  if (!isPlainObject(b))
    throw bad(code, `${what}: ${field} is not an object`, 'each content block is {type:"text",text} or {type:"tool_call",id,name,input}', field);
  if (b.type === 'text') {
    if (typeof b.text !== 'string') throw bad(code, `${what}: ${field}.text must be a string`, 'a text block is {"type":"text","text":"..."}', `${field}.text`);
    return { type: 'text', text: b.text };
  }
  if (b.type === 'tool_call') {
    if (typeof b.id !== 'string' || b.id === '')
      throw bad(code, `${what}: ${field}.id must be a non-empty string`, 'a tool_call block is {"type":"tool_call","id","name","input"}', `${field}.id`);
    if (typeof b.name !== 'string' || b.name === '')
      throw bad(code, `${what}: ${field}.name must be a non-empty string`, 'a tool_call block names the tool to call', `${field}.name`);
    if (!isPlainObject(b.input))
      throw bad(code, `${what}: ${field}.input must be a JSON object`, 'tool input is an object of named arguments', `${field}.input`);
    return { type: 'tool_call', id: b.id, name: b.name, input: b.input };
  }
  throw bad(
    code,
    `${what}: ${field}.type is ${JSON.stringify(b.type)}; expected "text" or "tool_call"`,
    'the wire format knows two content block types: text and tool_call',
    `${field}.type`,
  );
}

/** One message, wire fields only. Throws E-INF-001 on a shape the driver could not read. */
export function toWireMessage(m: WireMessage | ConversationMessage, field = 'message'): WireMessage {
  const code = 'E-INF-001';
  const what = 'cannot build driver request';
  if (!isPlainObject(m)) throw bad(code, `${what}: ${field} is not an object`, 'messages are {role, content, tool_call_id?, is_error?}', field);
  if (!(ROLES as readonly unknown[]).includes(m.role))
    throw bad(
      code,
      `${what}: ${field}.role is ${JSON.stringify(m.role)}; expected user, assistant or tool`,
      'the wire format has three roles: user, assistant, tool',
      `${field}.role`,
    );
  if (!Array.isArray(m.content))
    throw bad(
      code,
      `${what}: ${field}.content must be an array of content blocks`,
      'content is [{type:"text",text}|{type:"tool_call",id,name,input}]',
      `${field}.content`,
    );
  const out: WireMessage = { role: m.role, content: m.content.map((b, i) => wireBlock(b, `${field}.content[${i}]`, code, what)) };
  if (m.role === 'tool') {
    if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')
      throw bad(
        code,
        `${what}: ${field} has role "tool" but no tool_call_id`,
        'a tool message answers one tool_call block and carries its id',
        `${field}.tool_call_id`,
      );
  }
  if (m.tool_call_id !== undefined) {
    if (typeof m.tool_call_id !== 'string')
      throw bad(
        code,
        `${what}: ${field}.tool_call_id must be a string`,
        'tool_call_id is the id of the tool_call block being answered',
        `${field}.tool_call_id`,
      );
    out.tool_call_id = m.tool_call_id;
  }
  if (m.is_error !== undefined) {
    if (typeof m.is_error !== 'boolean')
      throw bad(code, `${what}: ${field}.is_error must be a boolean`, 'is_error marks a failed tool result', `${field}.is_error`);
    out.is_error = m.is_error;
  }
  return out;
}

export function buildDriverRequest(input: BuildDriverRequestInput): DriverRequest {
  const code = 'E-INF-001';
  const what = 'cannot build driver request';
  if (typeof input.model !== 'string' || input.model === '')
    throw bad(code, `${what}: model must be a non-empty string`, 'set inference.model in murmur.yaml', 'inference.model');
  if (!Number.isSafeInteger(input.maxTokens) || input.maxTokens <= 0)
    throw bad(
      code,
      `${what}: max_tokens must be a positive integer, got ${String(input.maxTokens)}`,
      'set inference.max_tokens in murmur.yaml to a positive integer',
      'inference.max_tokens',
    );
  if (typeof input.promptCacheKey !== 'string' || input.promptCacheKey === '')
    throw bad(code, `${what}: prompt_cache_key must be a non-empty string`, 'build it with promptCacheKey(name, version, contextId)');
  const tools: ToolSpec[] = input.tools.map((t, i) => {
    if (!isPlainObject(t) || typeof t.name !== 'string' || t.name === '')
      throw bad(code, `${what}: tools[${i}] needs a non-empty name`, 'tools are {name, parameters, description?}', `tools[${i}].name`);
    const spec: ToolSpec = { name: t.name, parameters: t.parameters ?? { type: 'object', properties: {} } };
    if (t.description !== undefined) spec.description = t.description;
    return spec;
  });
  const req: DriverRequest = {
    model: input.model,
    max_tokens: input.maxTokens,
    messages: input.messages.map((m, i) => toWireMessage(m, `messages[${i}]`)),
    tools,
    params: input.params ?? {},
    system: input.system,
    prompt_cache_key: input.promptCacheKey,
  };
  if (input.continuationId !== undefined && input.continuationId !== '') {
    // Keep the reference key order: continuation_id before prompt_cache_key.
    const { prompt_cache_key, ...rest } = req;
    return { ...rest, continuation_id: input.continuationId, prompt_cache_key };
  }
  return req;
}

export interface DriverResponse {
  stop_reason: StopReason;
  content: ContentBlock[];
  /** The validated reported usage; absent when the driver reported nothing usable. */
  usage?: ReportedUsage;
  /** Usage members discarded under the degrade rules (for a log line; never a failure). */
  usageDropped: UsageDrop[];
  error?: string;
  /** The driver's HTTP attempts when it retried (429, 5xx, connection resets), oldest first. */
  attempts?: DriverAttempt[];
}

/** One HTTP attempt a driver reports: its status (absent when the connection failed), error, and the wait before the next. */
export interface DriverAttempt {
  attempt: number;
  status?: number;
  error?: string;
  retry_after_ms?: number;
  delay_ms?: number;
}

/** Provider error text is cut to this many characters before it reaches an answer or the trace. */
export const ERROR_TEXT_MAX = 1024;

/** `s` cut to {@link ERROR_TEXT_MAX} characters, saying how much was cut. */
export function boundedError(s: string): string {
  return s.length > ERROR_TEXT_MAX ? `${s.slice(0, ERROR_TEXT_MAX)}… (${s.length - ERROR_TEXT_MAX} more characters cut)` : s;
}

function driverAttempts(v: unknown): DriverAttempt[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : undefined);
  // At most 20 kept: a driver's own retry count is bounded, and the trace must be too.
  return v
    .slice(0, 20)
    .filter(isPlainObject)
    .map((a, i) => {
      const out: DriverAttempt = { attempt: num(a.attempt) ?? i + 1 };
      if (num(a.status) !== undefined) out.status = num(a.status);
      if (typeof a.error === 'string') out.error = boundedError(a.error);
      if (num(a.retry_after_ms) !== undefined) out.retry_after_ms = num(a.retry_after_ms);
      if (num(a.delay_ms) !== undefined) out.delay_ms = num(a.delay_ms);
      return out;
    });
}

/**
 * Validate a driver response (the JSON string from `tool-result.data`, or its parsed value).
 * Throws E-INF-002 when it is not JSON and E-INF-003 when the shape is wrong, naming the field.
 * `usage` never fails the call: it degrades per the usage table.
 */
export function parseDriverResponse(raw: unknown): DriverResponse {
  let v: unknown = raw;
  if (typeof raw === 'string') {
    try {
      v = JSON.parse(raw);
    } catch (e) {
      const head = raw.length > 120 ? `${raw.slice(0, 120)}…` : raw;
      throw new MurError('E-INF-002', `driver response is not JSON: ${(e as Error).message} (got ${JSON.stringify(head)})`, {
        hint: 'the driver must return {"stop_reason", "content", "usage"?, "error"?} as JSON in tool-result.data',
        cause: e,
      });
    }
  }
  const code = 'E-INF-003';
  const what = 'malformed driver response';
  if (!isPlainObject(v))
    throw bad(
      code,
      `${what}: expected a JSON object, got ${Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v}`,
      'the driver must return {"stop_reason", "content", ...}',
    );
  if (!(STOP_REASONS as readonly unknown[]).includes(v.stop_reason)) {
    throw bad(
      code,
      `${what}: stop_reason is ${JSON.stringify(v.stop_reason)}; expected tool_call, end_turn, max_tokens or error`,
      'map the provider stop reason onto the four the wire format knows',
      'stop_reason',
    );
  }
  const stop = v.stop_reason as StopReason;
  let content: ContentBlock[];
  if (v.content === undefined && stop === 'error') content = [];
  else if (!Array.isArray(v.content))
    throw bad(code, `${what}: content must be an array of content blocks`, 'content is [{type:"text",text}|{type:"tool_call",id,name,input}]', 'content');
  else content = v.content.map((b, i) => wireBlock(b, `content[${i}]`, code, what));
  const calls = content.filter((b): b is ToolCallBlock => b.type === 'tool_call');
  if (stop === 'tool_call' && calls.length === 0)
    throw bad(
      code,
      `${what}: stop_reason is tool_call but content holds no tool_call block`,
      'return at least one {"type":"tool_call"} block with stop_reason tool_call',
      'content',
    );
  const seen = new Set<string>();
  for (const c of calls) {
    if (seen.has(c.id))
      throw bad(
        code,
        `${what}: two tool_call blocks share the id ${JSON.stringify(c.id)}`,
        'each tool call needs a distinct id so its result can be paired with it',
        'content',
      );
    seen.add(c.id);
  }
  const { usage, dropped } = parseUsageReport(v.usage);
  const out: DriverResponse = { stop_reason: stop, content, usageDropped: dropped };
  if (usage !== undefined) out.usage = usage;
  if (v.error !== undefined && v.error !== null) out.error = boundedError(typeof v.error === 'string' ? v.error : JSON.stringify(v.error));
  const attempts = driverAttempts(v.attempts);
  if (attempts) out.attempts = attempts;
  return out;
}

/** The assistant message to append to the history for a parsed driver response. */
export function assistantMessage(response: Pick<DriverResponse, 'content'>): WireMessage {
  return { role: 'assistant', content: response.content.map((b) => ({ ...b })) };
}

/** The tool message answering tool call `toolCallId` (one text block). */
export function toolMessage(toolCallId: string, text: string, isError = false): WireMessage {
  return { role: 'tool', content: [{ type: 'text', text }], tool_call_id: toolCallId, is_error: isError };
}

/** The tool calls of a response, in order. */
export function toolCalls(response: Pick<DriverResponse, 'content'>): ToolCallBlock[] {
  return response.content.filter((b): b is ToolCallBlock => b.type === 'tool_call');
}
