/**
 * An MCP server's form elicitation put to the task's caller as one text question, and the
 * caller's text answer turned back into the form's content (shared by agent sessions and script
 * capsules). The question is attributed to the server that asks it.
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';

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
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      return { action: 'accept', content: parsed as Record<string, string | number | boolean> };
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
