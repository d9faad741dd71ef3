/**
 * Policy hooks (hooks.md "Policy hooks"): `commit_policy: deny` on `binding: on-tool-call | on-shell`
 * is consulted at the decision point, before the call, and fails closed: the call proceeds only on a
 * clean `none`. The seven ways a policy hook refuses each get their own test.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { harness, scriptHook, variantHook, SHELL_EV, SHELL_OUTCOME, TOOL_EV, TOOL_OUTCOME, type Harness, type Script } from './harness.ts';
import type { StagedHook } from '../../runtime/hooks/types.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

async function policy(script: Script, extra: Partial<StagedHook> = {}, binding: 'on-tool-call' | 'on-shell' = 'on-tool-call'): Promise<Harness> {
  const h = await harness([await scriptHook('guard', script, { binding, commitPolicy: 'deny', ...extra })]);
  open.push(h);
  return h;
}

function expectRefused(h: Harness, d: Awaited<ReturnType<Harness['bus']['toolDecision']>>, reason: RegExp, failClosed: boolean): void {
  expect(d.allowed).toBe(false);
  if (d.allowed) return;
  expect(d.hook).toBe('guard');
  expect(d.reason).toMatch(reason);
  expect(d.agentMessage).toMatch(/policy hook 'guard'/);
  expect(d.agentMessage).toContain(d.reason);
  expect(d.agentMessage).toMatch(/Retrying the same call unchanged will be refused again/);
  const denied = h.events('call_denied');
  expect(denied).toHaveLength(1);
  expect(denied[0]).toMatchObject({ hook: 'guard', reason: d.reason, fail_closed: failClosed });
  // Nothing ran, so nothing but the refusal (and, for a defect, its fault) is traced.
  expect(h.events('tool_call')).toEqual([]);
  expect(h.events('shell')).toEqual([]);
}

describe('the decision point', () => {
  it('a clean none lets the call proceed, with no event', async () => {
    const h = await policy({ 'on-tool-call:decision': { record: true } });
    expect(await h.bus.toolDecision(TOOL_EV)).toEqual({ allowed: true });
    expect(h.events()).toEqual([]);
    // The hook saw the resolved identity: the exact input JSON and no outcome.
    expect(h.recs[0]).toMatchObject({ rec: 'on-tool-call:decision', ev: { toolName: 'echo', input: '{"data":"hi"}', inputBytes: 13 } });
    expect((h.recs[0]!.ev as Record<string, unknown>).outcome).toBeUndefined();
  });

  it('a shell policy hook sees binary, exact argv, script and recipe; command is display only', async () => {
    const h = await policy({ 'on-shell:decision': { record: true } }, {}, 'on-shell');
    const ev = {
      turn: 3,
      binary: '/usr/bin/sh',
      command: 'x'.repeat(200),
      argv: ['-c', `echo ${'y'.repeat(300)}`],
      script: `echo ${'y'.repeat(300)}`,
      recipe: undefined,
    };
    expect(await h.bus.shellDecision(ev)).toEqual({ allowed: true });
    expect(h.recs[0]!.ev).toMatchObject({ binary: '/usr/bin/sh', argv: ev.argv, script: ev.script });
  });

  it('only policy hooks are consulted: an observer bound to the same handler is not called before the call', async () => {
    const observer = await scriptHook(
      'watcher',
      { 'on-tool-call': { record: true, ret: { tag: 'deny', val: 'observer says no' } } },
      { binding: 'on-tool-call', commitPolicy: 'none' },
    );
    const h = await harness([observer]);
    open.push(h);
    expect(await h.bus.toolDecision(TOOL_EV)).toEqual({ allowed: true });
    expect(h.recs).toEqual([]);
  });

  it('policy hooks run in manifest order; the first refusal decides and later hooks are not asked', async () => {
    const a = await scriptHook('first', { 'on-tool-call:decision': { record: true } }, { binding: 'on-tool-call', commitPolicy: 'deny' });
    const b = await scriptHook(
      'second',
      { 'on-tool-call:decision': { record: true, ret: { tag: 'deny', val: 'second refuses' } } },
      { binding: 'on-tool-call', commitPolicy: 'deny' },
    );
    const c = await scriptHook('third', { 'on-tool-call:decision': { record: true } }, { binding: 'on-tool-call', commitPolicy: 'deny' });
    const h = await harness([a, b, c]);
    open.push(h);
    const d = await h.bus.toolDecision(TOOL_EV);
    expect(d).toMatchObject({ allowed: false, hook: 'second', reason: 'second refuses' });
    expect(h.recs.map((r) => r.rec)).toEqual(['on-tool-call:decision', 'on-tool-call:decision']);
  });

  it('a tool policy hook is not asked about shell commands, nor the other way round', async () => {
    const h = await policy({ '*': { ret: { tag: 'deny', val: 'never' } } });
    expect(await h.bus.shellDecision(SHELL_EV)).toEqual({ allowed: true });
    expect((await h.bus.toolDecision(TOOL_EV)).allowed).toBe(false);
  });
});

describe('fail-closed: seven ways a policy hook refuses', () => {
  it('1. a returned deny(reason) refuses with that reason', async () => {
    const h = await policy({ 'on-tool-call:decision': { ret: { tag: 'deny', val: 'writes outside the sandbox' } } });
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /^writes outside the sandbox$/, false);
    expect(h.events('call_denied')[0]).toMatchObject({ kind: 'tool', tool_name: 'echo', turn: 1 });
    expect(h.events('hook_dispatch_error')).toEqual([]);
  });

  it('2. a crash (trap) refuses', async () => {
    const h = await policy({ 'on-tool-call:decision': { trap: true } });
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /policy hook 'guard' crashed: .*trapped/, true);
    expect(h.log('guard')).toMatch(/on-tool-call decision point: crashed.*the call is refused \(fail-closed\)/);
  });

  it('3. a call past its deadline refuses', async () => {
    const h = await policy({ 'on-tool-call:decision': { loop: true } }, { deadlineMs: 1500 });
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /policy hook 'guard' did not answer within its 1500 ms deadline/, true);
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ arm: 'deadline' });
  });

  it('4. a memory-limit kill refuses', async () => {
    const h = await policy({ 'on-shell:decision': { balloon: 8 } }, { memoryBytes: 96 * 1048576 }, 'on-shell');
    const d = await h.bus.shellDecision(SHELL_EV);
    expectRefused(h, d, /policy hook 'guard' was killed at its 96 MiB memory limit/, true);
    expect(h.events('call_denied')[0]).toMatchObject({ kind: 'shell', binary: '/usr/bin/git', argv: ['status', '--short'] });
  });

  it('5. a return the runtime cannot read refuses', async () => {
    const h = await harness([await variantHook('hook-unreadable', 'guard', { binding: 'on-tool-call', commitPolicy: 'deny' })]);
    open.push(h);
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /policy hook 'guard' returned a value the runtime cannot read: unknown hook-output arm 'allow'/, true);
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ arm: 'unreadable' });
  });

  it('6. a deny with an empty reason refuses, with the runtime naming the defect', async () => {
    const h = await policy({ 'on-tool-call:decision': [{ ret: { tag: 'deny', val: '' } }, { ret: { tag: 'deny', val: '   ' } }] });
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /policy hook 'guard' returned deny with an empty reason/, true);
    expect((await h.bus.toolDecision(TOOL_EV)).allowed).toBe(false);
  });

  it('7. any other arm refuses', async () => {
    const h = await policy({ 'on-tool-call:decision': { ret: { tag: 'artifact', val: '{"allow":true}' } } });
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /policy hook 'guard' returned arm 'artifact', which is not an answer at the decision point/, true);
  });

  it('a WIT err from a policy hook refuses as well', async () => {
    const h = await policy({ 'on-tool-call:decision': { err: 'policy backend down' } });
    const d = await h.bus.toolDecision(TOOL_EV);
    expectRefused(h, d, /policy hook 'guard' returned err: policy backend down/, true);
  });

  it('after a fail-closed refusal the hook is restarted and a clean none lets the next call through', async () => {
    const h = await policy({ 'on-tool-call:decision': { trap: true }, 'on-shell:decision': {} });
    expect((await h.bus.toolDecision(TOOL_EV)).allowed).toBe(false);
    // (the policy hook is bound to on-tool-call: shell calls are not its business)
    expect(await h.bus.shellDecision(SHELL_EV)).toEqual({ allowed: true });
  });
});

describe('the observation dispatch keeps the non-fatal default', () => {
  it('a deny at the observation is a logged, traced fault that changes nothing', async () => {
    const h = await policy({ 'on-tool-call:observe': { ret: { tag: 'deny', val: 'too late' } } });
    await h.bus.toolObserved({ ...TOOL_EV, outcome: TOOL_OUTCOME });
    expect(h.events('call_denied')).toEqual([]);
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ hook_name: 'guard', event: 'on-tool-call', arm: 'deny' });
    expect(h.log('guard')).toMatch(/on-tool-call returned arm 'deny' at the observation dispatch \(the call already ran\)/);
  });

  it('a policy hook sees both dispatches of its event; observers see the observation alone', async () => {
    const both = { 'on-shell:decision': { record: true }, 'on-shell:observe': { record: true } };
    const pol = await scriptHook('guard', both, { binding: 'on-shell', commitPolicy: 'deny' });
    const obs = await scriptHook('watcher', both, { binding: 'on-shell' });
    const h = await harness([pol, obs]);
    open.push(h);
    expect(await h.bus.shellDecision(SHELL_EV)).toEqual({ allowed: true });
    await h.bus.shellObserved({ ...SHELL_EV, outcome: SHELL_OUTCOME });
    expect(h.recs.map((r) => r.rec)).toEqual(['on-shell:decision', 'on-shell:observe', 'on-shell:observe']);
  });

  it('a trap at the observation is logged and the session goes on', async () => {
    const h = await policy({ 'on-tool-call:observe': { trap: true } });
    await h.bus.toolObserved({ ...TOOL_EV, outcome: TOOL_OUTCOME });
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ arm: 'trap' });
    expect(await h.bus.toolDecision(TOOL_EV)).toEqual({ allowed: true });
  });
});
