/**
 * What a turn's input-token count costs (runtime/loop/agent-loop.ts conversationTokens), on the
 * real token counter: the system prompt and tool specs, the same text every turn of every task of
 * a session, are counted once; each message once; and the total is the same as counting it all.
 */
import { describe, expect, it } from 'vitest';
import { conversationTokens } from '../../runtime/loop/agent-loop.ts';
import { tokenCounter } from '../../runtime/inference/tokens.ts';
import type { ConversationMessage, ToolSpec } from '../../runtime/inference/wire.ts';

const SYSTEM = 'You are a careful assistant for the counting test.';
const tools = (): ToolSpec[] => [{ name: 'echo', description: 'Echoes its input.', parameters: { type: 'object', properties: { text: { type: 'string' } } } }];
const user = (text: string): ConversationMessage => ({ role: 'user', content: [{ type: 'text', text }] }) as ConversationMessage;

describe('input tokens of a turn', () => {
  it('counts a session’s system prompt and tool specs once, not again every turn of every task', async () => {
    const counter = tokenCounter();
    const counted: string[] = [];
    const countMany = counter.countMany.bind(counter);
    counter.countMany = (texts: string[]) => {
      counted.push(...texts);
      return countMany(texts);
    };
    try {
      const first = await conversationTokens(counter, SYSTEM, tools(), [user('task one')]);
      const second = await conversationTokens(counter, SYSTEM, tools(), [user('task two')]);
      // Each task builds its inventory afresh: equal specs, another array.
      const third = await conversationTokens(counter, SYSTEM, tools(), [user('task three')]);
      expect(counted.filter((t) => t === SYSTEM)).toHaveLength(1);
      expect(counted.filter((t) => t === JSON.stringify(tools()))).toHaveLength(1);
      const [s, t, one, two, three] = await countMany([SYSTEM, JSON.stringify(tools()), ...['task one', 'task two', 'task three'].map(messageText)]);
      expect([first, second, third]).toEqual([s! + t! + one!, s! + t! + two!, s! + t! + three!]);
      // Another system prompt is counted for itself.
      await conversationTokens(counter, `${SYSTEM} Changed.`, tools(), [user('task one')]);
      expect(counted.filter((x) => x === `${SYSTEM} Changed.`)).toHaveLength(1);
    } finally {
      counter.countMany = countMany;
    }
  });
});

/** A message as historyTokens counts it. */
function messageText(text: string): string {
  const m = user(text);
  return JSON.stringify({ role: m.role, content: m.content, tool_call_id: m.tool_call_id, is_error: m.is_error });
}
