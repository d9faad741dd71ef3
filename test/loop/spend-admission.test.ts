/**
 * The spend ceiling's admission of a loop turn reserves the tokens of the whole conversation, even
 * when a stateful driver is sent only the continued delta: the ceiling bounds what the provider
 * holds in its context, not the bytes of one request. Real replay driver and echo tool components.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import { ECHO_TOOL } from './kit.ts';
import { endTurn, openReplay, toolCall, type ReplayKit } from './replay-kit.ts';

let kit: ReplayKit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('spend admission', () => {
  it('a continued turn is admitted against the full history, not the smaller continued delta', async () => {
    // Turn 1 carries a long task (~4 000 tokens) and is admitted; the driver returns a continuation
    // id, so turn 2 sends only the delta (its own tool call and the echo's result, a few hundred
    // tokens). Against the full history turn 2 reserves ~4 000 more tokens than the 6 000 left
    // room for; against the delta it would fit.
    kit = await openReplay({
      tools: [ECHO_TOOL],
      responses: [{ ...toolCall('echo', { text: 'a' }), metadata: [['continuation_id', 'cont-1']] }, endTurn('never sent')],
      inferenceExtra: '  max_session_tokens: 6000\n  max_tokens: 100',
    });
    const r = await kit.session.runTask({ taskId: 't-spend', contextId: 'ctx-spend', text: 'word '.repeat(4000), source: 'task_md' });
    expect(r.exit).toBe('spend_ceiling_reached');
    expect(kit.recorder.bodies).toHaveLength(1);
    const events = readTrace(kit.session.staged.workdir.trace).events;
    const first = events.find((e) => e.event_type === 'inference')!;
    const refused = events.find((e) => e.event_type === 'spend_ceiling_reached')!;
    expect(Number(first.input_tokens)).toBeGreaterThan(4000);
    // The refused reservation holds the whole history: turn 1's input and more, plus max_tokens.
    expect(Number(refused.requested)).toBeGreaterThan(Number(first.input_tokens) + 100);
  });
});
