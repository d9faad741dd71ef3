/**
 * The hook contract the loop calls (runtime/hooks/port.ts) is derived from the commit table: one
 * dispatch method per session handler, two (decision, observation) exactly for the handlers with a
 * decision point, and what each answer committed is that handler's arm. The bus's policy hooks
 * are the table's too (isPolicyHook).
 */
import { describe, expect, it } from 'vitest';
import { COMMIT_POLICIES, COMMIT_TABLE, DECISION_HANDLERS, HANDLERS, isPolicyHook, POLICIES_REQUIRING_BINDING } from '../../runtime/contracts/commit-table.ts';
import { NO_HOOKS, PORT_HANDLERS, PORT_METHODS, committedArm, type DispatchMethod } from '../../runtime/hooks/port.ts';

const methods = Object.keys(PORT_METHODS) as DispatchMethod[];

describe('PORT_METHODS against COMMIT_TABLE', () => {
  it('dispatches every handler but on-stage, and NO_HOOKS answers each method', () => {
    expect([...new Set(methods.map((m) => PORT_METHODS[m].handler))].sort()).toEqual([...PORT_HANDLERS].sort());
    expect(PORT_HANDLERS).toEqual(HANDLERS.filter((h) => h !== 'on-stage'));
    for (const m of methods) expect(typeof NO_HOOKS[m], m).toBe('function');
  });

  it('has a decision and an observation method exactly for the handlers with a decision point', () => {
    for (const h of PORT_HANDLERS) {
      const phases = methods.filter((m) => PORT_METHODS[m].handler === h).map((m) => PORT_METHODS[m].phase ?? 'single');
      expect(phases.sort(), h).toEqual(COMMIT_TABLE[h].decisionPointOnly ? ['decision', 'observation'] : ['single']);
    }
    expect(DECISION_HANDLERS).toEqual(['on-tool-call', 'on-shell']);
  });

  it("an answer that committed something is the handler's arm from the table; nothing is none", () => {
    const committing: Partial<Record<DispatchMethod, unknown>> = {
      taskStart: { messages: [{ role: 'user', content: 'seed' }] },
      inference: ['{"k":1}'],
      toolDecision: { allowed: false, hook: 'g', reason: 'no', agentMessage: 'no' },
      shellDecision: { allowed: false, hook: 'g', reason: 'no', agentMessage: 'no' },
      compaction: { kind: 'replaced', hook: 'c', messages: [] },
      taskEnd: { reopen: { hook: 'j', feedback: 'again' } },
    };
    for (const m of methods) {
      const arm = COMMIT_TABLE[PORT_METHODS[m].handler].committedArm;
      if (committing[m] !== undefined) expect(committedArm(m, committing[m]), m).toBe(arm);
      // Observations commit nothing, whatever the arm of their handler.
      if (PORT_METHODS[m].phase === 'observation') expect(committedArm(m, committing[m.replace('Observed', 'Decision') as DispatchMethod]), m).toBe('none');
    }
    expect(committedArm('toolDecision', { allowed: true })).toBe('none');
    expect(committedArm('taskStart', { messages: [] })).toBe('none');
    expect(committedArm('compaction', { kind: 'invalid', hook: 'c', reason: 'pairs' })).toBe('none');
    expect(committedArm('taskEnd', {})).toBe('none');
  });
});

describe('policy hooks from the table', () => {
  it('a policy hook is bound to a decision handler and declares the policy it honors there', () => {
    for (const h of HANDLERS) {
      for (const p of COMMIT_POLICIES) {
        expect(isPolicyHook(h, p), `${h} ${p}`).toBe(h === 'on-tool-call' || h === 'on-shell' ? p === 'deny' : false);
      }
    }
    for (const p of COMMIT_POLICIES) expect(isPolicyHook(undefined, p)).toBe(false);
    expect(POLICIES_REQUIRING_BINDING).toEqual(['deny']);
  });
});
