/**
 * on-compaction (wit-interfaces.md, research §5.5): the first committed replace-context replaces the
 * history (ids minted, source-id kept, inserted-by set); unmatched tool-call/result pairs are refused
 * and the session goes on; a handler error ends the session — `spend_ceiling_reached` when it follows
 * a run-inference the spend ceiling refused, `failed` otherwise.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { harness, scriptHook, compactionEv, type Harness } from './harness.ts';
import type { HookMessage } from '../../runtime/hooks/types.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

async function compactor(script: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Harness> {
  const h = await harness([await scriptHook('squash', script, { binding: 'on-compaction', commitPolicy: 'replace-context', ...extra })]);
  open.push(h);
  return h;
}

const HISTORY: HookMessage[] = [
  { role: 'user', content: 'do the thing', id: 'msg_a' },
  { role: 'assistant', content: JSON.stringify([{ type: 'tool_call', id: 'call_1', name: 'echo', input: { data: 'x' } }]), id: 'msg_b' },
  { role: 'tool', content: JSON.stringify({ __murmur_tool_msg__: true, tool_call_id: 'call_1', is_error: false, body: 'x' }), id: 'msg_c' },
];

describe('replace-context', () => {
  it('a summarizing hook: run-inference with the event’s model and prompt, history replaced, ids minted, source-id kept', async () => {
    const h = await compactor({ 'on-compaction': { compact: { sourceId: 'summary:v1' } } });
    const r = await h.bus.compaction(compactionEv(HISTORY));
    expect(h.inferences).toHaveLength(1);
    expect(h.inferences[0]).toMatchObject({ hook: 'squash', req: { model: 'small-model', systemPrompt: 'Summarize.' } });
    expect(h.inferences[0]!.req.messages.map((m) => m.content)).toEqual(HISTORY.map((m) => m.content));
    expect(r.kind).toBe('replaced');
    if (r.kind !== 'replaced') return;
    expect(r.hook).toBe('squash');
    expect(r.messages).toHaveLength(1);
    expect(r.messages[0]).toMatchObject({
      role: 'user',
      content: 'summary: completion of 3 message(s)',
      sourceId: 'summary:v1',
      insertedBy: 'replace-context',
    });
    expect(r.messages[0]!.id).toMatch(/^msg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(h.events()).toEqual([]);
  });

  it('a hook’s own ids are replaced; a replacement keeping matched tool pairs is accepted', async () => {
    const msgs = [{ role: 'user', content: 'summary so far', id: 'hook-chosen-id' }, ...HISTORY.slice(1).map((m) => ({ ...m, id: 'dup' }))];
    const h = await compactor({ 'on-compaction': { ret: { tag: 'replace-context', val: msgs } } });
    const r = await h.bus.compaction(compactionEv(HISTORY));
    expect(r.kind).toBe('replaced');
    if (r.kind !== 'replaced') return;
    const ids = r.messages.map((m) => m.id);
    expect(ids).not.toContain('hook-chosen-id');
    expect(ids).not.toContain('dup');
    expect(new Set(ids).size).toBe(3);
    expect(r.messages.every((m) => m.sourceId === undefined)).toBe(true);
  });

  it('a replacement whose tool-call/result pairs do not match is refused and the session goes on', async () => {
    const orphan = [{ role: 'user', content: 'summary' }, HISTORY[2]!];
    const unanswered = [{ role: 'user', content: 'summary' }, HISTORY[1]!];
    const h = await compactor({ 'on-compaction': [{ ret: { tag: 'replace-context', val: orphan } }, { ret: { tag: 'replace-context', val: unanswered } }] });
    const a = await h.bus.compaction(compactionEv(HISTORY));
    expect(a).toEqual({
      kind: 'invalid',
      hook: 'squash',
      reason: expect.stringMatching(/replacement refused: tool result at message 1 answers no open tool call \(call_1\)/),
    });
    const b = await h.bus.compaction(compactionEv(HISTORY));
    expect(b).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/tool call call_1 is never answered/) });
    expect(h.events('hook_dispatch_error').map((e) => e.arm)).toEqual(['replace-context', 'replace-context']);
    expect(h.log('squash')).toMatch(/on-compaction replacement refused: .*history kept/);
  });

  it('no hook returning replace-context leaves the history alone', async () => {
    const h = await compactor({});
    expect(await h.bus.compaction(compactionEv(HISTORY))).toEqual({ kind: 'none' });
  });

  it('the first replacement wins; a later hook’s is discarded', async () => {
    const a = await scriptHook(
      'one',
      { 'on-compaction': { ret: { tag: 'replace-context', val: [{ role: 'user', content: 'from one' }] } } },
      { commitPolicy: 'replace-context' },
    );
    const b = await scriptHook(
      'two',
      { 'on-compaction': { ret: { tag: 'replace-context', val: [{ role: 'user', content: 'from two' }] } } },
      { commitPolicy: 'replace-context' },
    );
    const h = await harness([a, b]);
    open.push(h);
    expect(await h.bus.compaction(compactionEv(HISTORY))).toMatchObject({ kind: 'replaced', hook: 'one', messages: [{ content: 'from one' }] });
    expect(h.log('two')).toMatch(/superseded/);
  });
});

describe('a compaction handler error ends the session', () => {
  it('a WIT err → fatal, exit status failed, naming the hook', async () => {
    const h = await compactor({ 'on-compaction': { err: 'cannot summarize' } });
    const r = await h.bus.compaction(compactionEv(HISTORY));
    expect(r).toEqual({ kind: 'fatal', hook: 'squash', exitStatus: 'failed', message: "compaction hook 'squash' returned err: cannot summarize" });
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ event: 'on-compaction', arm: 'error' });
  });

  it('an err after run-inference was refused by the spend ceiling → spend_ceiling_reached', async () => {
    const h = await compactor({ 'on-compaction': { compact: {} } });
    h.services.infer = async () => {
      throw Object.assign(new Error('spend ceiling reached: 1000 of 1000 tokens used'), { spendRefused: true });
    };
    const r = await h.bus.compaction(compactionEv(HISTORY));
    expect(r).toMatchObject({ kind: 'fatal', hook: 'squash', exitStatus: 'spend_ceiling_reached' });
    expect(r.kind === 'fatal' && r.message).toMatch(/after the spend ceiling refused its run-inference/);
  });

  it('an err after an ordinary run-inference failure is failed, not spend_ceiling_reached', async () => {
    const h = await compactor({ 'on-compaction': { compact: {} } });
    h.services.infer = async () => {
      throw new Error('driver dispatch failed');
    };
    expect(await h.bus.compaction(compactionEv(HISTORY))).toMatchObject({ kind: 'fatal', exitStatus: 'failed' });
  });

  it('a trap or a deadline at on-compaction is fatal too', async () => {
    const h = await compactor({ 'on-compaction': [{ trap: true }, { loop: true }] }, { deadlineMs: 1500 });
    expect(await h.bus.compaction(compactionEv(HISTORY))).toMatchObject({ kind: 'fatal', exitStatus: 'failed', message: expect.stringMatching(/crashed/) });
    // (the trap restarted the instance: its script starts over at the first step)
    const h2 = await compactor({ 'on-compaction': { loop: true } }, { deadlineMs: 1500 });
    expect(await h2.bus.compaction(compactionEv(HISTORY))).toMatchObject({
      kind: 'fatal',
      exitStatus: 'failed',
      message: expect.stringMatching(/1500 ms deadline/),
    });
  });

  it('an async hook’s compaction error is not fatal', async () => {
    const h = await harness([await scriptHook('bg', { 'on-compaction': { err: 'meh' } }, { executionMode: 'async' })]);
    open.push(h);
    expect(await h.bus.compaction(compactionEv(HISTORY))).toEqual({ kind: 'none' });
    await h.bus.drain();
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ hook_name: 'bg', event: 'on-compaction', arm: 'error' });
  });
});
