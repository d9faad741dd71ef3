/**
 * An MCP `CallToolResult` through the same tool-result rules as a WASM tool's `tool-result`
 * (runtime/tools/result.ts): it becomes a `{status, data, metadata}` record and is parsed by the
 * one parser, so the reserved metadata keys (`state_effect`, `resource_id`, `continuation_id`,
 * from the result's `_meta`) mean the same and are checked the same; the text handed to the model
 * is bounded like a tool's `data-path` (10 MiB). Binary content (images, audio, blobs) is not put
 * in front of the model: it is named with its type and size.
 */
import { MurError } from '../errors.ts';
import { DATA_PATH_MAX_BYTES, parseToolResult, type ToolResult } from '../tools/index.ts';

export const MCP_RESULT_MAX_BYTES = DATA_PATH_MAX_BYTES;

interface Block {
  type?: unknown;
  text?: unknown;
  data?: unknown;
  mimeType?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: { uri?: unknown; text?: unknown; blob?: unknown; mimeType?: unknown };
}

function blockText(b: Block): string {
  switch (b.type) {
    case 'text':
      return typeof b.text === 'string' ? b.text : '';
    case 'image':
    case 'audio':
      return `[${b.type} ${String(b.mimeType ?? '')}, ${typeof b.data === 'string' ? Math.floor((b.data.length * 3) / 4) : 0} bytes, not shown]`;
    case 'resource_link':
      return `[resource link ${String(b.uri ?? '')}${b.name ? ` (${String(b.name)})` : ''}]`;
    case 'resource': {
      const r = b.resource ?? {};
      if (typeof r.text === 'string') return r.text;
      return `[resource ${String(r.uri ?? '')} ${String(r.mimeType ?? '')}, binary, not shown]`;
    }
    default:
      return `[${String(b.type)} content, not shown]`;
  }
}

export interface McpToolOutcome {
  result: ToolResult;
  /** What the model is told. */
  text: string;
}

/** `raw` is the SDK-validated result of `tools/call`. */
export function toolOutcome(
  server: string,
  tool: string,
  raw: { content?: unknown; structuredContent?: unknown; isError?: unknown; _meta?: unknown },
): McpToolOutcome {
  const blocks = Array.isArray(raw.content) ? (raw.content as Block[]) : [];
  let text = blocks
    .map(blockText)
    .filter((t) => t !== '')
    .join('\n');
  if (text === '' && raw.structuredContent !== undefined) text = JSON.stringify(raw.structuredContent);
  const bytes = Buffer.byteLength(text);
  if (bytes > MCP_RESULT_MAX_BYTES) {
    throw new MurError('E-MCP-011', `MCP tool '${tool}' of server '${server}' returned ${bytes} bytes of text, over the ${MCP_RESULT_MAX_BYTES}-byte bound`, {
      hint: 'ask the tool for less output',
    });
  }
  // `_meta` string values are the result's metadata: the reserved keys among them mean what they
  // mean for a WASM tool; other values (objects) are the server's own and are not read.
  const meta =
    raw._meta && typeof raw._meta === 'object'
      ? Object.entries(raw._meta as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string')
      : [];
  const result = parseToolResult({ status: raw.isError === true ? 'failed' : 'passed', data: text, truncated: false, metadata: meta });
  return { result, text };
}
