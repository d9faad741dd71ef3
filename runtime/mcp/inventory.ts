/**
 * Which of an MCP server's listed tools the model sees, and how: the manifest's tool list picks
 * them; each is named `mcp__<server>__<tool>` (artifact names have no `_`, so no WASM tool or
 * delegate-task can take such a name, and a clash with anything else is refused, never shadowed);
 * its description is bounded and attributed to its server (it is the server's text, not the
 * runtime's: a description that says "ignore previous instructions" reaches the model as what
 * `<server>` says about its tool, and nothing in the runtime reads it as an instruction); its input
 * schema must be a JSON Schema object of bounded size. A tool that fails a rule is left out and
 * reported (`E-MCP-014`), the server's other tools stay.
 */
import type { McpServer } from '../manifest/mcp.ts';
import { MCP_TOOL_NAME_RE } from '../manifest/mcp.ts';

/** Tools one server may contribute: each one is a metric label value and inventory bytes. */
export const MAX_TOOLS_PER_SERVER = 64;
/** A description is sent with every turn: bounded, the rest cut with a marker. */
export const MAX_DESCRIPTION_BYTES = 1024;
/** A schema is sent with every turn too. */
export const MAX_SCHEMA_BYTES = 16 * 1024;
/** Provider limit on a tool name (OpenAI and Anthropic: 64). */
export const MAX_TOOL_NAME = 64;

const TRUNCATED = ' [description truncated]';

export interface McpToolDef {
  /** The name the model sees. */
  name: string;
  server: string;
  /** The name the server knows it by. */
  remote: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The description was cut to the bound. */
  descriptionTruncated: boolean;
}

export interface RefusedTool {
  server: string;
  tool: string;
  code: string;
  reason: string;
}

export function modelToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/** Cuts `s` to at most `max` UTF-8 bytes on a character boundary. */
export function cutBytes(s: string, max: number): string {
  if (Buffer.byteLength(s) <= max) return s;
  let out = Buffer.from(s).subarray(0, max).toString('utf8');
  // A cut inside a multi-byte character decodes to U+FFFD: drop it.
  if (out.endsWith('\uFFFD')) out = out.slice(0, -1);
  return out;
}

function schemaProblem(schema: unknown): string | undefined {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'its input schema is not a JSON object';
  const s = schema as Record<string, unknown>;
  if (s.type !== 'object') return `its input schema has type ${JSON.stringify(s.type)}, not "object" (tool arguments are an object)`;
  if (
    s.properties !== undefined &&
    (s.properties === null ||
      typeof s.properties !== 'object' ||
      Array.isArray(s.properties) ||
      Object.values(s.properties).some((p) => p === null || (typeof p !== 'object' && typeof p !== 'boolean')))
  ) {
    return 'its input schema\'s "properties" is not a mapping of schemas';
  }
  if (s.required !== undefined && (!Array.isArray(s.required) || s.required.some((r) => typeof r !== 'string')))
    return 'its input schema\'s "required" is not a list of names';
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(schema));
  } catch {
    return 'its input schema cannot be written as JSON';
  }
  if (bytes > MAX_SCHEMA_BYTES) return `its input schema is ${bytes} bytes, over ${MAX_SCHEMA_BYTES}`;
  return undefined;
}

/**
 * The model-visible tools of one server from its raw `tools/list` entries. `taken` holds every
 * other tool name of the inventory (WASM tools, shell binaries, runtime tools, other servers').
 */
export function admitTools(server: McpServer, listed: readonly unknown[], taken: ReadonlySet<string>): { tools: McpToolDef[]; refused: RefusedTool[] } {
  const tools: McpToolDef[] = [];
  const refused: RefusedTool[] = [];
  const all = server.tools.includes('*');
  const wanted = new Set(server.tools);
  const refuse = (tool: string, reason: string, code = 'E-MCP-014') => refused.push({ server: server.name, tool: cutBytes(tool, 128), code, reason });
  const seen = new Set<string>();
  for (const raw of listed) {
    const t = raw as { name?: unknown; description?: unknown; inputSchema?: unknown };
    if (!t || typeof t !== 'object' || typeof t.name !== 'string') {
      refuse('?', 'a tools/list entry has no name');
      continue;
    }
    if (!all && !wanted.has(t.name)) continue;
    if (seen.has(t.name)) {
      refuse(t.name, 'the server lists it twice');
      continue;
    }
    seen.add(t.name);
    if (!MCP_TOOL_NAME_RE.test(t.name)) {
      refuse(t.name, 'its name is not 1-64 of [A-Za-z0-9_-] (the characters every provider admits)');
      continue;
    }
    const name = modelToolName(server.name, t.name);
    if (name.length > MAX_TOOL_NAME) {
      refuse(t.name, `'${name}' is over ${MAX_TOOL_NAME} characters`);
      continue;
    }
    if (taken.has(name)) {
      refuse(t.name, `'${name}' is already a tool of this capsule; the capsule's own tool keeps the name`);
      continue;
    }
    const bad = schemaProblem(t.inputSchema);
    if (bad) {
      refuse(t.name, bad);
      continue;
    }
    if (tools.length >= MAX_TOOLS_PER_SERVER) {
      refuse(t.name, `the server offers more than ${MAX_TOOLS_PER_SERVER} tools`);
      continue;
    }
    const own = typeof t.description === 'string' ? t.description : '';
    const attributed = `[MCP server '${server.name}'] ${own || `The ${t.name} tool.`}`;
    const cut = Buffer.byteLength(attributed) > MAX_DESCRIPTION_BYTES;
    const description = cut ? `${cutBytes(attributed, MAX_DESCRIPTION_BYTES - Buffer.byteLength(TRUNCATED))}${TRUNCATED}` : attributed;
    tools.push({ name, server: server.name, remote: t.name, description, descriptionTruncated: cut, parameters: t.inputSchema as Record<string, unknown> });
  }
  if (!all) {
    for (const w of server.tools) if (!seen.has(w)) refuse(w, 'the server does not list it', 'E-MCP-015');
  }
  return { tools, refused };
}
