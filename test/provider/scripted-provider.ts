/**
 * The scripted provider: the project's only stand-in. A real HTTP server on 127.0.0.1 that speaks
 * the real wire formats of
 *
 * - the **Anthropic Messages API** — `POST /v1/messages`, JSON or SSE (`stream: true`: `message_start`,
 *   `content_block_start/delta/stop` with `text_delta` / `input_json_delta`, `message_delta`,
 *   `message_stop`, `ping`), `tool_use` blocks, `stop_reason`, usage with
 *   `cache_read_input_tokens` / `cache_creation_input_tokens`; and
 * - **OpenAI Chat Completions** — `POST /v1/chat/completions`, JSON or SSE `data:` chunks ending in
 *   `data: [DONE]`, `tool_calls` (arguments as a JSON string, streamed in fragments keyed by
 *   `index`), `finish_reason`, `usage.prompt_tokens/completion_tokens/prompt_tokens_details.cached_tokens`
 *   (in a final chunk only with `stream_options.include_usage`),
 *
 * and replays a script: an ordered list of turns (text, tool calls, stop reason, usage, HTTP
 * errors, raw responses, delays). Every request is recorded (body + headers) for assertions.
 *
 * Requests are validated the way the real APIs validate them, so a driver bug shows up here and not
 * in production: missing auth → 401; missing `anthropic-version` → 400; any body field the API does
 * not define → 400 (`prompt_cache_key` on Anthropic answers `invalid_request_error` "Extra inputs
 * are not permitted"; OpenAI answers "Unrecognized request argument supplied"); `tool_use` without
 * a `tool_result` in the very next message; OpenAI `tool` messages without a preceding `tool_calls`;
 * `prompt_cache_key` over 64 characters; and so on. A rejected request consumes no turn.
 *
 * Usage numbers in a turn are provider-neutral and go out verbatim: `input` → `input_tokens` /
 * `prompt_tokens`, `output` → `output_tokens` / `completion_tokens`, `cacheRead` →
 * `cache_read_input_tokens` / `prompt_tokens_details.cached_tokens`, `cacheWrite` →
 * `cache_creation_input_tokens` (OpenAI reports none). `input`/`output` default to a length-based
 * estimate; cache members are sent only when the turn sets them.
 *
 * CLI (offline demo): `node --import tsx test/provider/scripted-provider.ts --script file.json
 * [--port N] [--host 127.0.0.1] [--record requests.jsonl]` prints
 * `scripted-provider listening on http://127.0.0.1:N` and serves until SIGINT/SIGTERM.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export type Api = 'anthropic' | 'openai';
export type StopKind = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'pause_turn';

export interface ScriptToolCall {
  /** Defaults to `toolu_scripted_<turn>_<i>` (Anthropic) / `call_scripted_<turn>_<i>` (OpenAI). */
  id?: string;
  name: string;
  input?: Record<string, unknown>;
}

export interface ScriptUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface ScriptTurn {
  /** Serve this turn only on this API; a request on the other answers 500 (a script bug). */
  api?: Api;
  text?: string;
  toolCalls?: ScriptToolCall[];
  /** Anthropic terms; default `tool_use` with tool calls, else `end_turn`. OpenAI: stop/tool_calls/length/content_filter. */
  stop?: StopKind;
  usage?: ScriptUsage;
  /**
   * Answer with an HTTP error in the API's own error shape. `echoKey`: the message ends with the key
   * the request carried (`x-api-key` or the bearer token), as some providers quote it back.
   */
  error?: { status: number; type?: string; message?: string; retryAfter?: number; echoKey?: boolean };
  /** Streaming only: send the opening event(s), then an error event (Anthropic `event: error`; OpenAI `data: {"error":…}`). */
  streamError?: { type?: string; message?: string };
  /** Streaming: send every content event, then end the response without the final ones (Anthropic `message_delta`/`message_stop`; OpenAI the `finish_reason` chunk and `[DONE]`), as a dropped connection does. */
  cutStream?: boolean;
  /** Reset the connection (TCP RST) instead of answering: no status line, no body. */
  reset?: boolean;
  /** Send exactly this HTTP response. */
  raw?: { status?: number; headers?: Record<string, string>; body: string };
  /** Wait this long before answering. */
  delayMs?: number;
  /**
   * In-process only: called when this turn's request arrives; the answer waits until the returned
   * promise settles. A test learns the request is in flight and decides when it ends, with no sleep.
   */
  hold?: () => Promise<unknown>;
  /**
   * In-process only, streaming: called once the first text delta is on the wire; the rest of the
   * stream waits until the returned promise settles. A test sees what a client does with the part
   * of an answer that has arrived while the provider is still streaming it.
   */
  holdMidStream?: () => Promise<unknown>;
  /** Streaming: wait this long between events. */
  chunkDelayMs?: number;
}

export interface Script {
  turns: ScriptTurn[];
  /** When set, requests must carry exactly this key (else any non-empty key is accepted). */
  apiKey?: string;
  /** What to do after the last turn: answer 500 (default) or replay the last turn. */
  onExhausted?: 'error' | 'repeat-last';
}

export interface RecordedRequest {
  api: Api | 'unknown';
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body, or `undefined` when it was not JSON. */
  body: unknown;
  rawBody: string;
  /** Index of the script turn that answered it; absent when rejected or unrouted. */
  turn?: number;
  status: number;
  /** Error message sent back, for rejected requests. */
  error?: string;
}

export interface ScriptedProvider {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:43123`. */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Turns not yet served. */
  remaining(): number;
  stop(): Promise<void>;
}

export interface StartOptions {
  port?: number;
  host?: string;
  /** Called after each request is answered (the CLI uses it for --record). */
  onRequest?: (r: RecordedRequest) => void;
  /** Keep only the last `keep` requests in `requests` (soak benches send tens of thousands). */
  keep?: number;
}

// ------------------------------------------------------------------------------------------- shapes

const ANTHROPIC_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'stream',
  'temperature',
  'top_k',
  'top_p',
  'thinking',
  'metadata',
  'service_tier',
  'cache_control',
  'container',
  'mcp_servers',
  'context_management',
  'output_config',
  'output_format',
  'inference_geo',
]);
const ANTHROPIC_BLOCKS = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'container_upload',
]);
const OPENAI_FIELDS = new Set([
  'messages',
  'model',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'prompt_cache_retention',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
]);
const OPENAI_ROLES = ['system', 'assistant', 'user', 'function', 'tool', 'developer'];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const OPENAI_FINISH: Record<StopKind, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  refusal: 'content_filter',
};
const ERROR_TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

interface Rejection {
  status: number;
  type: string;
  message: string;
  param?: string | null;
  code?: string | null;
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const reject = (status: number, type: string, message: string, param: string | null = null, code: string | null = null): Rejection => ({
  status,
  type,
  message,
  param,
  code,
});

function validateAnthropic(headers: Record<string, string>, body: unknown, apiKey?: string): Rejection | undefined {
  const key = headers['x-api-key'] ?? (headers.authorization?.startsWith('Bearer ') ? headers.authorization.slice(7) : undefined);
  if (!key) return reject(401, 'authentication_error', 'x-api-key header is required');
  if (apiKey !== undefined && key !== apiKey) return reject(401, 'authentication_error', 'invalid x-api-key');
  if (!headers['anthropic-version']) return reject(400, 'invalid_request_error', 'anthropic-version: header is required');
  if (!isObj(body)) return reject(400, 'invalid_request_error', 'There was an error parsing the body of your request: expected a JSON object');
  for (const k of Object.keys(body)) {
    if (!ANTHROPIC_FIELDS.has(k)) return reject(400, 'invalid_request_error', `${k}: Extra inputs are not permitted`);
  }
  if (typeof body.model !== 'string' || body.model === '') return reject(400, 'invalid_request_error', 'model: Field required');
  if (body.max_tokens === undefined) return reject(400, 'invalid_request_error', 'max_tokens: Field required');
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) {
    return reject(400, 'invalid_request_error', 'max_tokens: Input should be greater than or equal to 1');
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return reject(400, 'invalid_request_error', 'stream: Input should be a valid boolean');
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system) || !body.system.every((b) => isObj(b) && b.type === 'text' && typeof b.text === 'string')) {
      return reject(400, 'invalid_request_error', 'system: Input should be a valid string or a list of text blocks');
    }
  }
  if (!Array.isArray(body.messages)) return reject(400, 'invalid_request_error', 'messages: Field required');
  if (body.messages.length === 0) return reject(400, 'invalid_request_error', 'messages: at least one message is required');
  const msgs = body.messages as unknown[];
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (!isObj(m)) return reject(400, 'invalid_request_error', `messages.${i}: Input should be a valid dictionary`);
    if (m.role === 'system') {
      return reject(
        400,
        'invalid_request_error',
        `messages.${i}.role: Unexpected role "system". The Messages API accepts a top-level \`system\` parameter, not "system" as an input message role.`,
      );
    }
    if (m.role !== 'user' && m.role !== 'assistant') return reject(400, 'invalid_request_error', `messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof m.content === 'string') continue;
    if (!Array.isArray(m.content)) return reject(400, 'invalid_request_error', `messages.${i}.content: Input should be a valid string or list`);
    if (m.content.length === 0 && !(m.role === 'assistant' && i === msgs.length - 1)) {
      return reject(400, 'invalid_request_error', `messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    }
    for (let j = 0; j < m.content.length; j++) {
      const b = m.content[j] as unknown;
      const where = `messages.${i}.content.${j}`;
      if (!isObj(b) || typeof b.type !== 'string') return reject(400, 'invalid_request_error', `${where}: Unable to extract tag using discriminator 'type'`);
      if (!ANTHROPIC_BLOCKS.has(b.type)) {
        return reject(
          400,
          'invalid_request_error',
          `${where}: Input tag '${b.type}' found using 'type' does not match any of the expected tags: ${[...ANTHROPIC_BLOCKS].map((t) => `'${t}'`).join(', ')}`,
        );
      }
      if (b.type === 'text' && typeof b.text !== 'string') return reject(400, 'invalid_request_error', `${where}.text: Field required`);
      if (b.type === 'text' && b.text === '') return reject(400, 'invalid_request_error', 'messages: text content blocks must be non-empty');
      if (b.type === 'tool_use') {
        if (m.role !== 'assistant') return reject(400, 'invalid_request_error', `${where}: tool_use blocks are only allowed in assistant messages`);
        if (typeof b.id !== 'string' || typeof b.name !== 'string') return reject(400, 'invalid_request_error', `${where}: id and name are required`);
        if (!isObj(b.input)) return reject(400, 'invalid_request_error', `${where}.input: Input should be a valid dictionary`);
      }
      if (b.type === 'tool_result') {
        if (m.role !== 'user') return reject(400, 'invalid_request_error', `${where}: tool_result blocks are only allowed in user messages`);
        if (typeof b.tool_use_id !== 'string') return reject(400, 'invalid_request_error', `${where}.tool_use_id: Field required`);
        if (b.is_error !== undefined && typeof b.is_error !== 'boolean')
          return reject(400, 'invalid_request_error', `${where}.is_error: Input should be a valid boolean`);
        if (b.content !== undefined && typeof b.content !== 'string' && !Array.isArray(b.content)) {
          return reject(400, 'invalid_request_error', `${where}.content: Input should be a valid string or list`);
        }
      }
    }
  }
  // Pairing: every tool_use needs a tool_result in the very next message, and only there.
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i] as Record<string, unknown>;
    const blocks = Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : [];
    const prev = i > 0 ? (msgs[i - 1] as Record<string, unknown>) : undefined;
    const prevUses = new Set(
      prev && prev.role === 'assistant' && Array.isArray(prev.content)
        ? (prev.content as Record<string, unknown>[]).filter((b) => b.type === 'tool_use').map((b) => b.id as string)
        : [],
    );
    for (let j = 0; j < blocks.length; j++) {
      const b = blocks[j]!;
      if (b.type === 'tool_result' && !prevUses.has(b.tool_use_id as string)) {
        return reject(
          400,
          'invalid_request_error',
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      }
    }
    if (m.role === 'assistant') {
      const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
      if (uses.length === 0) continue;
      const next = msgs[i + 1] as Record<string, unknown> | undefined;
      const results = new Set(
        next && next.role === 'user' && Array.isArray(next.content)
          ? (next.content as Record<string, unknown>[]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id as string)
          : [],
      );
      const missing = uses.filter((id) => !results.has(id));
      if (missing.length > 0) {
        return reject(
          400,
          'invalid_request_error',
          `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    }
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return reject(400, 'invalid_request_error', 'tools: Input should be a valid list');
    for (let i = 0; i < body.tools.length; i++) {
      const t = body.tools[i] as unknown;
      if (!isObj(t)) return reject(400, 'invalid_request_error', `tools.${i}: Input should be a valid dictionary`);
      if (t.type !== undefined && t.type !== 'custom') continue; // server tools
      if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
        return reject(400, 'invalid_request_error', `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
      }
      if (!isObj(t.input_schema)) return reject(400, 'invalid_request_error', `tools.${i}.custom.input_schema: Field required`);
      for (const k of Object.keys(t)) {
        if (!['name', 'description', 'input_schema', 'cache_control', 'type', 'strict', 'input_examples'].includes(k)) {
          return reject(400, 'invalid_request_error', `tools.${i}.custom.${k}: Extra inputs are not permitted`);
        }
      }
    }
  }
  return undefined;
}

function validateOpenAI(headers: Record<string, string>, body: unknown, apiKey?: string): Rejection | undefined {
  const auth = headers.authorization;
  const key = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
  if (!key) {
    return reject(
      401,
      'invalid_request_error',
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }
  if (apiKey !== undefined && key !== apiKey) {
    return reject(401, 'invalid_request_error', `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}.`, null, 'invalid_api_key');
  }
  if (!isObj(body))
    return reject(
      400,
      'invalid_request_error',
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
    );
  for (const k of Object.keys(body)) {
    if (!OPENAI_FIELDS.has(k)) return reject(400, 'invalid_request_error', `Unrecognized request argument supplied: ${k}`);
  }
  if (typeof body.model !== 'string' || body.model === '') return reject(400, 'invalid_request_error', 'you must provide a model parameter');
  if (body.messages === undefined)
    return reject(400, 'invalid_request_error', "Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  if (!Array.isArray(body.messages)) return reject(400, 'invalid_request_error', "Invalid type for 'messages': expected an array.", 'messages', 'invalid_type');
  if (body.messages.length === 0) {
    return reject(
      400,
      'invalid_request_error',
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'messages',
      'empty_array',
    );
  }
  if (body.stream_options !== undefined && body.stream !== true) {
    return reject(400, 'invalid_request_error', "The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options', null);
  }
  if (body.prompt_cache_key !== undefined) {
    if (typeof body.prompt_cache_key !== 'string')
      return reject(400, 'invalid_request_error', "Invalid type for 'prompt_cache_key': expected a string.", 'prompt_cache_key', 'invalid_type');
    if (body.prompt_cache_key.length > 64) {
      return reject(
        400,
        'invalid_request_error',
        `Invalid 'prompt_cache_key': string too long. Expected a string with maximum length 64, but got a string with length ${body.prompt_cache_key.length} instead.`,
        'prompt_cache_key',
        'string_above_max_length',
      );
    }
  }
  const msgs = body.messages as unknown[];
  let open: { index: number; ids: Set<string> } | undefined;
  const closeOpen = (): Rejection | undefined => {
    if (open && open.ids.size > 0) {
      return reject(
        400,
        'invalid_request_error',
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(', ')}`,
        `messages.[${open.index}].role`,
      );
    }
    open = undefined;
    return undefined;
  };
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (!isObj(m)) return reject(400, 'invalid_request_error', `Invalid type for 'messages[${i}]': expected an object.`, `messages[${i}]`, 'invalid_type');
    if (!OPENAI_ROLES.includes(m.role as string)) {
      return reject(
        400,
        'invalid_request_error',
        `Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        'invalid_value',
      );
    }
    if (m.role === 'tool') {
      if (!open || typeof m.tool_call_id !== 'string' || !open.ids.has(m.tool_call_id)) {
        return reject(
          400,
          'invalid_request_error',
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      }
      open.ids.delete(m.tool_call_id);
      if (typeof m.content !== 'string' && !Array.isArray(m.content)) {
        return reject(
          400,
          'invalid_request_error',
          `Invalid type for 'messages[${i}].content': expected one of a string or array of objects.`,
          `messages[${i}].content`,
          'invalid_type',
        );
      }
      continue;
    }
    const err = closeOpen();
    if (err) return err;
    if (m.role === 'assistant' && m.tool_calls !== undefined) {
      if (!Array.isArray(m.tool_calls))
        return reject(
          400,
          'invalid_request_error',
          `Invalid type for 'messages[${i}].tool_calls': expected an array.`,
          `messages[${i}].tool_calls`,
          'invalid_type',
        );
      const ids = new Set<string>();
      for (let j = 0; j < m.tool_calls.length; j++) {
        const c = m.tool_calls[j] as unknown;
        const where = `messages[${i}].tool_calls[${j}]`;
        if (!isObj(c) || typeof c.id !== 'string' || c.type !== 'function' || !isObj(c.function) || typeof c.function.name !== 'string') {
          return reject(400, 'invalid_request_error', `Missing required parameter: '${where}.function'.`, `${where}`, 'missing_required_parameter');
        }
        if (typeof c.function.arguments !== 'string') {
          return reject(
            400,
            'invalid_request_error',
            `Invalid type for '${where}.function.arguments': expected a string, but got ${Array.isArray(c.function.arguments) ? 'an array' : `an ${typeof c.function.arguments}`} instead.`,
            `${where}.function.arguments`,
            'invalid_type',
          );
        }
        ids.add(c.id);
      }
      if (ids.size > 0) open = { index: i, ids };
    } else if (m.content === undefined || (m.content === null && m.role !== 'assistant')) {
      return reject(
        400,
        'invalid_request_error',
        `Missing required parameter: 'messages[${i}].content'.`,
        `messages[${i}].content`,
        'missing_required_parameter',
      );
    }
  }
  const err = closeOpen();
  if (err) return err;
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return reject(400, 'invalid_request_error', "Invalid type for 'tools': expected an array.", 'tools', 'invalid_type');
    for (let i = 0; i < body.tools.length; i++) {
      const t = body.tools[i] as unknown;
      if (!isObj(t) || t.type !== 'function' || !isObj(t.function)) {
        return reject(
          400,
          'invalid_request_error',
          `Missing required parameter: 'tools[${i}].function'.`,
          `tools[${i}].function`,
          'missing_required_parameter',
        );
      }
      if (typeof t.function.name !== 'string' || !TOOL_NAME.test(t.function.name)) {
        return reject(
          400,
          'invalid_request_error',
          `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          `tools[${i}].function.name`,
          'invalid_value',
        );
      }
    }
  }
  return undefined;
}

// ------------------------------------------------------------------------------------------ replies

function estimate(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

interface Plan {
  text: string;
  calls: { id: string; name: string; input: Record<string, unknown> }[];
  stop: StopKind;
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

function planTurn(turn: ScriptTurn, index: number, api: Api, rawBody: string): Plan {
  const calls = (turn.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? (api === 'anthropic' ? `toolu_scripted_${index}_${i}` : `call_scripted_${index}_${i}`),
    name: c.name,
    input: c.input ?? {},
  }));
  const text = turn.text ?? '';
  const plan: Plan = {
    text,
    calls,
    stop: turn.stop ?? (calls.length > 0 ? 'tool_use' : 'end_turn'),
    input: turn.usage?.input ?? estimate(rawBody),
    output: turn.usage?.output ?? estimate(text + JSON.stringify(calls.map((c) => c.input))),
  };
  if (turn.usage?.cacheRead !== undefined) plan.cacheRead = turn.usage.cacheRead;
  if (turn.usage?.cacheWrite !== undefined) plan.cacheWrite = turn.usage.cacheWrite;
  return plan;
}

function anthropicUsage(p: Plan, output = p.output): Record<string, number> {
  const u: Record<string, number> = { input_tokens: p.input };
  if (p.cacheWrite !== undefined) u.cache_creation_input_tokens = p.cacheWrite;
  if (p.cacheRead !== undefined) u.cache_read_input_tokens = p.cacheRead;
  u.output_tokens = output;
  return u;
}

function openaiUsage(p: Plan): Record<string, unknown> {
  const u: Record<string, unknown> = { prompt_tokens: p.input, completion_tokens: p.output, total_tokens: p.input + p.output };
  if (p.cacheRead !== undefined) u.prompt_tokens_details = { cached_tokens: p.cacheRead };
  return u;
}

function anthropicContent(p: Plan): Record<string, unknown>[] {
  const content: Record<string, unknown>[] = [];
  if (p.text !== '') content.push({ type: 'text', text: p.text });
  for (const c of p.calls) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input });
  return content;
}

/** Split text into word-sized pieces (the way deltas arrive). */
function pieces(text: string, size = 12): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ------------------------------------------------------------------------------------------- server

export async function startScriptedProvider(script: Script | ScriptTurn[], opts: StartOptions = {}): Promise<ScriptedProvider> {
  const s: Script = Array.isArray(script) ? { turns: script } : script;
  const requests: RecordedRequest[] = [];
  let next = 0;
  let serial = 0;
  const sockets = new Set<import('node:net').Socket>();

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `scripted provider crashed: ${(e as Error).message}` } }));
      } else res.destroy();
    });
  });
  server.on('connection', (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const urlPath = (req.url ?? '/').split('?')[0]!;
    let body: unknown;
    try {
      body = rawBody === '' ? undefined : JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const api: Api | 'unknown' = urlPath === '/v1/messages' ? 'anthropic' : urlPath === '/v1/chat/completions' ? 'openai' : 'unknown';
    const rec: RecordedRequest = { api, method: req.method ?? 'GET', path: urlPath, headers, body, rawBody, status: 0 };
    requests.push(rec);
    if (opts.keep !== undefined && requests.length > opts.keep) requests.splice(0, requests.length - opts.keep);
    // Called just before the response ends, so a client never sees a reply before it is recorded.
    const finish = () => opts.onRequest?.(rec);

    const sendError = (a: Api | 'unknown', r: Rejection, extraHeaders: Record<string, string> = {}) => {
      rec.status = r.status;
      rec.error = r.message;
      const payload =
        a === 'openai'
          ? { error: { message: r.message, type: r.type, param: r.param ?? null, code: r.code ?? null } }
          : { type: 'error', error: { type: r.type, message: r.message } };
      const h: Record<string, string> = { 'content-type': 'application/json', ...extraHeaders };
      if (a === 'anthropic') h['request-id'] = `req_scripted_${++serial}`;
      else h['x-request-id'] = `req_scripted_${++serial}`;
      res.writeHead(r.status, h);
      finish();
      res.end(JSON.stringify(payload));
    };

    if (api === 'unknown') {
      const a: Api = urlPath.startsWith('/v1/chat') ? 'openai' : 'anthropic';
      return sendError(a, reject(404, a === 'openai' ? 'invalid_request_error' : 'not_found_error', `Unknown request URL: ${req.method} ${urlPath}`));
    }
    if (req.method !== 'POST') return sendError(api, reject(405, 'invalid_request_error', `Method ${req.method} not allowed; use POST ${urlPath}`));
    const invalid = api === 'anthropic' ? validateAnthropic(headers, body, s.apiKey) : validateOpenAI(headers, body, s.apiKey);
    if (invalid) return sendError(api, invalid);

    let index = next;
    if (index >= s.turns.length) {
      if (s.onExhausted === 'repeat-last' && s.turns.length > 0) index = s.turns.length - 1;
      else
        return sendError(
          api,
          reject(500, api === 'openai' ? 'server_error' : 'api_error', `scripted provider: script exhausted after ${s.turns.length} turn(s)`),
        );
    } else next++;
    const turn = s.turns[index]!;
    rec.turn = index;
    if (turn.api !== undefined && turn.api !== api) {
      return sendError(
        api,
        reject(
          500,
          api === 'openai' ? 'server_error' : 'api_error',
          `scripted provider: turn ${index} is scripted for ${turn.api}, but the request came on ${api}`,
        ),
      );
    }
    if (turn.delayMs) await sleep(turn.delayMs);
    if (turn.hold) await turn.hold();

    if (turn.reset) {
      rec.status = 0;
      finish();
      req.socket.resetAndDestroy();
      return;
    }
    if (turn.raw) {
      rec.status = turn.raw.status ?? 200;
      res.writeHead(rec.status, turn.raw.headers ?? { 'content-type': 'application/json' });
      finish();
      res.end(turn.raw.body);
      return;
    }
    if (turn.error) {
      const e = turn.error;
      const type = e.type ?? ERROR_TYPE_BY_STATUS[e.status] ?? 'api_error';
      const extra: Record<string, string> = e.retryAfter !== undefined ? { 'retry-after': String(e.retryAfter) } : {};
      const sent = headers['x-api-key'] ?? headers.authorization?.replace(/^Bearer /, '') ?? '';
      const message = `${e.message ?? `scripted ${e.status} ${type}`}${e.echoKey ? `: ${sent}` : ''}`;
      return sendError(api, reject(e.status, type, message, null, api === 'openai' ? type : null), extra);
    }

    const b = body as Record<string, unknown>;
    const model = b.model as string;
    const plan = planTurn(turn, index, api, rawBody);
    const stream = b.stream === true;
    rec.status = 200;
    const id = api === 'anthropic' ? `msg_scripted_${String(index).padStart(4, '0')}` : `chatcmpl-scripted-${index}`;

    if (!stream) {
      const payload =
        api === 'anthropic'
          ? {
              id,
              type: 'message',
              role: 'assistant',
              model,
              content: anthropicContent(plan),
              stop_reason: plan.stop,
              stop_sequence: null,
              usage: anthropicUsage(plan),
            }
          : {
              id,
              object: 'chat.completion',
              created: 1_700_000_000 + index,
              model,
              choices: [
                {
                  index: 0,
                  message: {
                    role: 'assistant',
                    content: plan.text === '' && plan.calls.length > 0 ? null : plan.text,
                    refusal: null,
                    annotations: [],
                    ...(plan.calls.length > 0
                      ? { tool_calls: plan.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) }
                      : {}),
                  },
                  logprobs: null,
                  finish_reason: OPENAI_FINISH[plan.stop],
                },
              ],
              usage: openaiUsage(plan),
              service_tier: 'default',
              system_fingerprint: null,
            };
      res.writeHead(200, { 'content-type': 'application/json', [api === 'anthropic' ? 'request-id' : 'x-request-id']: `req_scripted_${++serial}` });
      finish();
      res.end(JSON.stringify(payload));
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const gap = turn.chunkDelayMs ?? 0;
    const send = async (s: string) => {
      res.write(s);
      if (gap) await sleep(gap);
    };
    if (api === 'anthropic') {
      const ev = (name: string, data: unknown) => send(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      await ev('message_start', {
        type: 'message_start',
        message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: anthropicUsage(plan, 1) },
      });
      if (turn.streamError) {
        await ev('error', { type: 'error', error: { type: turn.streamError.type ?? 'overloaded_error', message: turn.streamError.message ?? 'Overloaded' } });
        finish();
        res.end();
        return;
      }
      await ev('ping', { type: 'ping' });
      let idx = 0;
      if (plan.text !== '') {
        await ev('content_block_start', { type: 'content_block_start', index: idx, content_block: { type: 'text', text: '' } });
        for (const [i, p] of pieces(plan.text).entries()) {
          await ev('content_block_delta', { type: 'content_block_delta', index: idx, delta: { type: 'text_delta', text: p } });
          if (i === 0 && turn.holdMidStream) await turn.holdMidStream();
        }
        await ev('content_block_stop', { type: 'content_block_stop', index: idx });
        idx++;
      }
      for (const c of plan.calls) {
        await ev('content_block_start', { type: 'content_block_start', index: idx, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
        await ev('content_block_delta', { type: 'content_block_delta', index: idx, delta: { type: 'input_json_delta', partial_json: '' } });
        for (const p of pieces(JSON.stringify(c.input), 7)) {
          await ev('content_block_delta', { type: 'content_block_delta', index: idx, delta: { type: 'input_json_delta', partial_json: p } });
        }
        await ev('content_block_stop', { type: 'content_block_stop', index: idx });
        idx++;
      }
      if (turn.cutStream) {
        finish();
        res.end();
        return;
      }
      await ev('message_delta', { type: 'message_delta', delta: { stop_reason: plan.stop, stop_sequence: null }, usage: anthropicUsage(plan) });
      await ev('message_stop', { type: 'message_stop' });
      finish();
      res.end();
      return;
    }
    const includeUsage = isObj(b.stream_options) && b.stream_options.include_usage === true;
    const base = { id, object: 'chat.completion.chunk', created: 1_700_000_000 + index, model, service_tier: 'default', system_fingerprint: null };
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      send(`data: ${JSON.stringify({ ...base, choices, ...(includeUsage ? { usage: null } : {}), ...extra })}\n\n`);
    await chunk([
      {
        index: 0,
        delta: { role: 'assistant', content: plan.text === '' && plan.calls.length > 0 ? null : '', refusal: null },
        logprobs: null,
        finish_reason: null,
      },
    ]);
    if (turn.streamError) {
      await send(
        `data: ${JSON.stringify({ error: { message: turn.streamError.message ?? 'The server had an error while processing your request.', type: turn.streamError.type ?? 'server_error', param: null, code: null } })}\n\n`,
      );
      finish();
      res.end();
      return;
    }
    for (const [i, p] of (plan.text === '' ? [] : pieces(plan.text)).entries()) {
      await chunk([{ index: 0, delta: { content: p }, logprobs: null, finish_reason: null }]);
      if (i === 0 && turn.holdMidStream) await turn.holdMidStream();
    }
    for (let i = 0; i < plan.calls.length; i++) {
      const c = plan.calls[i]!;
      await chunk([
        {
          index: 0,
          delta: { tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] },
          logprobs: null,
          finish_reason: null,
        },
      ]);
      for (const p of pieces(JSON.stringify(c.input), 7)) {
        await chunk([{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: p } }] }, logprobs: null, finish_reason: null }]);
      }
    }
    if (turn.cutStream) {
      finish();
      res.end();
      return;
    }
    await chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: OPENAI_FINISH[plan.stop] }]);
    if (includeUsage) await send(`data: ${JSON.stringify({ ...base, choices: [], usage: openaiUsage(plan) })}\n\n`);
    await send('data: [DONE]\n\n');
    finish();
    res.end();
    return;
  }

  await new Promise<void>((resolve, rejectListen) => {
    server.once('error', rejectListen);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', rejectListen);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    requests,
    remaining: () => Math.max(0, s.turns.length - next),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const sock of sockets) sock.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Read a script file: `{turns: [...], apiKey?, onExhausted?}` or a bare array of turns. */
export function loadScript(file: string): Script {
  const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  if (Array.isArray(v)) return { turns: v as ScriptTurn[] };
  if (isObj(v) && Array.isArray(v.turns)) return v as unknown as Script;
  throw new Error(`${file}: a script is {"turns": [...]} or an array of turns`);
}

// ---------------------------------------------------------------------------------------------- CLI

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      script: { type: 'string' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      record: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || !values.script) {
    process.stdout.write(
      'usage: node --import tsx test/provider/scripted-provider.ts --script <file.json> [--port N] [--host 127.0.0.1] [--record <requests.jsonl>]\n' +
        'Serves POST /v1/messages (Anthropic) and POST /v1/chat/completions (OpenAI), replaying the script.\n',
    );
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const script = loadScript(values.script);
  const record = values.record;
  const p = await startScriptedProvider(script, {
    port: Number(values.port),
    host: values.host,
    onRequest: record ? (r) => appendFileSync(record, `${JSON.stringify(r)}\n`) : undefined,
  });
  process.stdout.write(`scripted-provider listening on ${p.url}\n`);
  const shutdown = () => void p.stop().then(() => process.exit(0));
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`scripted-provider: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
