import { describe, expect, it } from 'vitest';
import { ContinuationState } from '../../runtime/inference/continuation.ts';

/** Simulate one turn: plan, "dispatch", append the assistant reply, acknowledge what was sent. */
function turn(state: ContinuationState, ctx: string, history: string[], reply: string, returned: string | undefined) {
  const sent = history.length;
  const plan = state.plan(ctx, history);
  history.push(reply);
  state.acknowledge(ctx, returned, history, sent);
  return plan;
}

describe('stateful driver continuation (wit-interfaces.md, five rows)', () => {
  it('row 1: driver returns a non-empty continuation_id → the runtime holds it', () => {
    const s = new ContinuationState();
    const h = ['u1'];
    const first = turn(s, 'ctx', h, 'a1', 'resp_1');
    expect(first).toEqual({ messages: ['u1'], full: true, reason: 'no-held-id' });
    expect(s.heldId).toBe('resp_1');
    expect(s.heldContextId).toBe('ctx');
  });

  it('row 2: next turn, same context_id → the messages appended since what the driver was sent (its own reply first), plus the held id', () => {
    const s = new ContinuationState();
    const h = ['u1'];
    turn(s, 'ctx', h, 'a1', 'resp_1');
    h.push('tool-result-1', 'tool-result-2');
    const second = turn(s, 'ctx', h, 'a2', 'resp_2');
    // The id covers what the driver was sent ([u1]), as in the reference: its own reply a1 leads the
    // delta, so a tool result never arrives without the tool call it answers.
    expect(second).toEqual({ messages: ['a1', 'tool-result-1', 'tool-result-2'], continuationId: 'resp_1', full: false, reason: 'continued' });
    h.push('u2');
    expect(s.plan('ctx', h)).toMatchObject({ messages: ['a2', 'u2'], continuationId: 'resp_2' });
  });

  it('row 3: next turn, different context_id → full resend; the id is never reused', () => {
    const s = new ContinuationState();
    const h = ['u1'];
    turn(s, 'ctx-a', h, 'a1', 'resp_1');
    h.push('u2');
    const other = s.plan('ctx-b', h);
    expect(other).toEqual({ messages: ['u1', 'a1', 'u2'], full: true, reason: 'context-changed' });
    expect(s.heldId).toBeUndefined();
    // Going back to the first context does not resurrect it either.
    expect(s.plan('ctx-a', h).full).toBe(true);
  });

  it('row 4: driver omits the key or returns "" → the held id is dropped; next turn is a full resend', () => {
    for (const returned of [undefined, '']) {
      const s = new ContinuationState();
      const h = ['u1'];
      turn(s, 'ctx', h, 'a1', 'resp_1');
      h.push('t1');
      turn(s, 'ctx', h, 'a2', returned);
      expect(s.heldId).toBeUndefined();
      h.push('t2');
      expect(s.plan('ctx', h)).toEqual({ messages: ['u1', 'a1', 't1', 'a2', 't2'], full: true, reason: 'no-held-id' });
    }
  });

  it('row 5: a hook commits replace-context → the held id is dropped; next turn resends the post-compaction history', () => {
    const s = new ContinuationState();
    let h = ['u1'];
    turn(s, 'ctx', h, 'a1', 'resp_1');
    h.push('t1', 'u2', 'a2', 't2');
    s.replaceContext();
    h = ['summary', 't2'];
    expect(s.heldId).toBeUndefined();
    expect(s.plan('ctx', h)).toEqual({ messages: ['summary', 't2'], full: true, reason: 'no-held-id' });
  });

  it('a history with messages put ahead of the acknowledged ones (a new task’s seed-context) is a full resend', () => {
    const s = new ContinuationState();
    const h = ['u1'];
    turn(s, 'ctx', h, 'a1', 'resp_1');
    // Same context, a follow-up task: the threaded history plus a new message continues...
    expect(s.plan('ctx', [...h, 'u2'])).toMatchObject({ messages: ['a1', 'u2'], continuationId: 'resp_1', reason: 'continued' });
    // ...but seed messages at its head shift what the driver acknowledged: resend everything.
    expect(s.plan('ctx', ['seed', ...h, 'u2'])).toEqual({ messages: ['seed', 'u1', 'a1', 'u2'], full: true, reason: 'history-diverged' });
    expect(s.heldId).toBeUndefined();
  });

  it('a history of the same length but other messages (an unthreaded task reusing the context id) is a full resend', () => {
    const s = new ContinuationState();
    const h = ['u1'];
    turn(s, 'ctx', h, 'a1', 'resp_1');
    expect(s.plan('ctx', ['new task', 'more'])).toEqual({ messages: ['new task', 'more'], full: true, reason: 'history-diverged' });
  });

  it('a history shorter than the acknowledged length (rewritten without replace-context) is a full resend', () => {
    const s = new ContinuationState();
    const h = ['u1', 'u2'];
    turn(s, 'ctx', h, 'a1', 'resp_1');
    expect(s.plan('ctx', ['only'])).toEqual({ messages: ['only'], full: true, reason: 'history-diverged' });
    expect(s.heldId).toBeUndefined();
  });
});
