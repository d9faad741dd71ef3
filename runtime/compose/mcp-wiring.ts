/**
 * Wires a session to the MCP servers its manifest names (docs/mcp.md): connects them before the
 * session opens (the inventory needs their tools), hands their tools to the loop as runtime tools,
 * and maps what a server asks of the client onto the running task: an elicitation becomes the
 * task's `input-required` (answered over A2A), a progress notification a status message on the
 * task's stream, a sampling request one call of the capsule's own driver against its spend ceiling
 * (`sampling: driver`). What the manifest refuses is refused with the protocol's error: the client
 * does not declare the capability, and the SDK answers "method not found".
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { McpTools, type ServerRequests } from '../mcp/index.ts';
import type { CapsuleSession, TaskSink } from '../loop/session.ts';
import type { StagedCapsule } from '../session/stage.ts';

/** Every tool name the capsule has besides its MCP tools: an MCP tool never takes one. */
function otherToolNames(staged: StagedCapsule): Set<string> {
  const m = staged.manifest;
  return new Set([
    ...staged.artifacts.filter((a) => a.manifest.runtime === 'tool').map((a) => a.name),
    ...(m.capabilities.shell?.allow ?? []),
    'delegate-task',
  ]);
}

export async function openMcpTools(staged: StagedCapsule, env: NodeJS.ProcessEnv, session: () => CapsuleSession | undefined): Promise<McpTools | undefined> {
  const m = staged.manifest;
  if (!m.mcp?.servers.length) return undefined;
  return McpTools.open({
    servers: m.mcp.servers,
    allow: m.capabilities.network.allow,
    env,
    deadlineSeconds: m.capabilities.limits.deadlineSeconds,
    taken: otherToolNames(staged),
    requests: serverRequests(session),
  });
}

function serverRequests(session: () => CapsuleSession | undefined): ServerRequests {
  const io = () => session()?.components.io as Partial<TaskSink> | undefined;
  return {
    elicit: async (server, params) => {
      const ask = io()?.requestInput;
      // Outside an A2A task nobody can answer: declined, so the server's tool goes on without it.
      if (!ask) return { action: 'decline' };
      const answer = await ask(elicitationPrompt(server, params));
      return elicitationResult(params, answer);
    },
    sample: async (server, params) => {
      const s = session();
      if (!s) throw new Error('no session');
      // The server's messages are its own text: they go to the capsule's driver as the request's
      // messages, never into the task's conversation. Images and audio are named, not sent.
      const messages = params.messages.map((m) => ({ role: m.role, content: samplingText(m.content) }));
      const r = await s.samplingInference({ messages, ...(params.systemPrompt ? { systemPrompt: params.systemPrompt } : {}) }, server);
      return { role: 'assistant' as const, content: { type: 'text' as const, text: r.text }, model: r.modelUsed, stopReason: 'endTurn' };
    },
    progress: (server, tool, p) => {
      const total = p.total !== undefined ? `/${p.total}` : '';
      io()?.status?.(`MCP ${server}/${tool}: ${p.progress}${total}${p.message ? ` ${p.message.slice(0, 200)}` : ''}`);
    },
  };
}

function samplingText(content: unknown): string {
  const blocks = (Array.isArray(content) ? content : [content]) as Array<{ type?: string; text?: string; mimeType?: string }>;
  return blocks.map((b) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : `[${String(b?.type)} ${String(b?.mimeType ?? '')} not shown]`)).join('\n');
}

type Field = { type?: string; title?: string; description?: string };

function fieldsOf(params: ElicitRequest['params']): Record<string, Field> {
  const schema = (params as { requestedSchema?: { properties?: Record<string, Field> } }).requestedSchema;
  return schema?.properties ?? {};
}

/** The question put to the task's caller, attributed to the server that asks it. */
export function elicitationPrompt(server: string, params: ElicitRequest['params']): string {
  const fields = Object.entries(fieldsOf(params));
  const lines = [`MCP server '${server}' asks: ${String(params.message ?? '').slice(0, 2000)}`];
  if (fields.length === 1) lines.push(`Reply with the ${fields[0]![0]} (${fields[0]![1].type ?? 'string'}), or "decline".`);
  else if (fields.length > 1) lines.push(`Reply with a JSON object with ${fields.map(([k, f]) => `${k} (${f.type ?? 'string'})`).join(', ')}, or "decline".`);
  return lines.join('\n');
}

/** The caller's text answer as the server's requested content; anything else declines. */
export function elicitationResult(params: ElicitRequest['params'], answer: string): ElicitResult {
  const text = answer.trim();
  if (text === '' || /^(decline|no|cancel)$/i.test(text)) return { action: 'decline' };
  const fields = Object.entries(fieldsOf(params));
  if (fields.length === 1) {
    const [name, f] = fields[0]!;
    const v = coerce(text, f.type);
    return v === undefined ? { action: 'decline' } : { action: 'accept', content: { [name]: v } };
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return { action: 'accept', content: parsed as Record<string, string | number | boolean> };
  } catch {
    // not JSON: declined below
  }
  return { action: 'decline' };
}

function coerce(text: string, type: string | undefined): string | number | boolean | undefined {
  if (type === 'number' || type === 'integer') {
    const n = Number(text);
    return Number.isFinite(n) && (type === 'number' || Number.isInteger(n)) ? n : undefined;
  }
  if (type === 'boolean') return /^(true|yes)$/i.test(text) ? true : /^(false)$/i.test(text) ? false : undefined;
  return text;
}
