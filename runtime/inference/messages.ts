/**
 * Conversation messages as the loop holds them: minted ids, a user text message, the text of a
 * message, and the rule that every tool call is answered exactly once. Pure helpers the loop and
 * the hook boundary (runtime/hooks/conversation.ts) share.
 */
import { randomUUID } from 'node:crypto';
import type { ContentBlock, ConversationMessage } from './wire.ts';

export function mintMessageId(): string {
  return `msg_${randomUUID()}`;
}

export function userText(text: string, extra: Partial<ConversationMessage> = {}): ConversationMessage {
  return { role: 'user', content: [{ type: 'text', text }], id: mintMessageId(), ...extra };
}

export function textOf(m: { content: ContentBlock[] }): string {
  return m.content
    .filter((b): b is { type: 'text'; text: string } => b.type === 'text')
    .map((b) => b.text)
    .join('');
}

/**
 * Every tool_call block must be answered by exactly one following tool message with its id, and
 * every tool message must answer a call. Returns a reason when the list breaks that pairing.
 */
export function toolPairProblem(msgs: readonly ConversationMessage[]): string | undefined {
  const open = new Set<string>();
  const seen = new Set<string>();
  for (const [i, m] of msgs.entries()) {
    if (m.role === 'assistant') {
      if (open.size) return `tool call ${[...open][0]} is not answered before message ${i}`;
      for (const b of m.content) {
        if (b.type === 'tool_call') {
          if (seen.has(b.id)) return `tool call id ${b.id} repeats at message ${i}`;
          seen.add(b.id);
          open.add(b.id);
        }
      }
    } else if (m.role === 'tool') {
      if (!m.tool_call_id || !open.has(m.tool_call_id)) return `tool result at message ${i} answers no open tool call (${m.tool_call_id ?? 'no id'})`;
      open.delete(m.tool_call_id);
    } else if (open.size) {
      return `tool call ${[...open][0]} is not answered before message ${i}`;
    }
  }
  return open.size ? `tool call ${[...open][0]} is never answered` : undefined;
}
