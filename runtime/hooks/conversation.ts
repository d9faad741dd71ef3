/**
 * Conversation messages (runtime/inference/messages.ts) translated to and from the hook `message`
 * record. Tool results cross to hooks inside a `__murmur_tool_msg__` envelope so a compaction hook
 * can hand them back verbatim; messages built from a hook's list get a fresh `msg_<uuid>` id (a
 * hook's own id is replaced), and `source-id` is carried as is.
 */
import type { ContentBlock, ConversationMessage, Role } from '../inference/wire.ts';
import { mintMessageId, textOf } from '../inference/messages.ts';
import type { HookMessage } from './port.ts';

export function toHookMessage(m: ConversationMessage): HookMessage {
  let content: string;
  if (m.role === 'tool') {
    content = JSON.stringify({ __murmur_tool_msg__: true, tool_call_id: m.tool_call_id ?? null, is_error: m.is_error ?? null, body: textOf(m) });
  } else if (m.content.every((b) => b.type === 'text')) {
    content = textOf(m);
  } else {
    content = JSON.stringify(m.content);
  }
  const out: HookMessage = { role: m.role, content };
  if (typeof m.id === 'string') out.id = m.id;
  if (typeof m['source-id'] === 'string') out.sourceId = m['source-id'];
  return out;
}

function parseBlocks(s: string): ContentBlock[] | undefined {
  if (!s.startsWith('[')) return undefined;
  try {
    const v = JSON.parse(s) as unknown;
    if (!Array.isArray(v)) return undefined;
    const ok = v.every(
      (b) =>
        b &&
        typeof b === 'object' &&
        ((b.type === 'text' && typeof b.text === 'string') ||
          (b.type === 'tool_call' && typeof b.id === 'string' && typeof b.name === 'string' && b.input && typeof b.input === 'object')),
    );
    return ok ? (v as ContentBlock[]) : undefined;
  } catch {
    return undefined;
  }
}

/** Builds conversation messages from a hook's list. Throws on a role the wire cannot carry. */
export function fromHookMessages(list: readonly HookMessage[], insertedBy: 'replace-context' | 'seed-context'): ConversationMessage[] {
  return list.map((h, i) => {
    const role = h.role as Role;
    if (role !== 'user' && role !== 'assistant' && role !== 'tool') {
      throw new Error(`message ${i} has role ${JSON.stringify(h.role)}; expected user, assistant or tool`);
    }
    // The hook bus has already replaced a hook's own id with a minted one; keep that (it is what the
    // trace's context_seed / compaction events name), and mint only where none is set.
    const id = typeof h.id === 'string' && h.id.startsWith('msg_') ? h.id : mintMessageId();
    const base: ConversationMessage = { role, content: [], id, 'inserted-by': insertedBy };
    if (h.sourceId !== undefined) base['source-id'] = h.sourceId;
    if (role === 'tool') {
      let env: { __murmur_tool_msg__?: boolean; tool_call_id?: string | null; is_error?: boolean | null; body?: unknown } | undefined;
      try {
        env = JSON.parse(h.content) as typeof env;
      } catch {
        env = undefined;
      }
      if (!env?.__murmur_tool_msg__ || typeof env.tool_call_id !== 'string') {
        throw new Error(`message ${i} has role "tool" but no tool envelope with a tool_call_id`);
      }
      base.tool_call_id = env.tool_call_id;
      if (typeof env.is_error === 'boolean') base.is_error = env.is_error;
      base.content = [{ type: 'text', text: typeof env.body === 'string' ? env.body : JSON.stringify(env.body ?? '') }];
      return base;
    }
    base.content = parseBlocks(h.content) ?? [{ type: 'text', text: h.content }];
    return base;
  });
}
